// Command toolreg checks tool manifests, renders the schemas a model
// provider is shown, and inspects what the effector recorded.
//
//	toolreg vet [-provider form] [-strict] [-v] [paths...]
//	toolreg schema [-provider form] [paths...]
//	toolreg gen [-o file] [-pkg name] [paths...]
//	toolreg diff [-dir directory] [-format format] OLD [NEW]
//	toolreg search [-n n] [-read-only] [-tag tags] [-provider form] [-scopes scopes] QUERY [paths...]
//	toolreg intents list|show|stats|resolve|purge STORE [ID]
//	toolreg approvals list|show|approve|deny STORE [ID]
//
// vet reports every problem in the manifests; schema prints the tools schema
// they give, as JSON; gen writes their Go argument structs and Bind<Tool>
// helpers; diff classifies the contract changes between two manifest sets as
// breaking, safety or compatible; search finds the tools of a large manifest
// set by what they do, with the ranking the search_tools meta-tool uses;
// intents and approvals read and resolve what an effector's dedup store
// holds. 'toolreg --help' lists every command, init, migrate, pin, budgets
// and version among them.
//
// Paths are manifest files or directories (searched recursively for .yaml,
// .yml and .cue files); the default is ./manifests. Flags go before the
// arguments. Run 'toolreg --help' or 'toolreg <command> --help' for details.
// The commands live in package internal/cli, so tests run them in-process.
package main
