// Command toolreg checks tool manifests and renders the schemas a model
// provider is shown.
//
//	toolreg vet [-provider form] [-strict] [-v] [paths...]
//	toolreg schema [-provider form] [paths...]
//	toolreg gen [-o file] [-pkg name] [paths...]
//	toolreg diff [-dir directory] [-format format] OLD [NEW]
//
// vet reports every problem in the manifests; schema prints the tools schema
// they give, as JSON; gen writes their Go argument structs and Bind<Tool>
// helpers; diff classifies the contract changes between two manifest sets as
// breaking, safety or compatible.
//
// Paths are manifest files or directories (searched recursively for .yaml,
// .yml and .cue files); the default is ./manifests. Run 'toolreg --help' or
// 'toolreg <command> --help' for details. The commands live in package
// internal/cli, so tests run them in-process.
package main
