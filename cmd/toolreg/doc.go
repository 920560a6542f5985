// Command toolreg checks tool manifests and renders the schemas a model
// provider is shown.
//
//	toolreg vet [-v] [paths...]      report every problem in the manifests
//	toolreg schema [paths...]        print the aggregate tools schema as JSON
//
// Paths are manifest files or directories (searched recursively for .yaml,
// .yml and .cue files); the default is ./manifests. Run 'toolreg --help' or
// 'toolreg <command> --help' for details. The commands live in package
// internal/cli, so tests run them in-process.
package main
