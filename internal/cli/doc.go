// Package cli implements the toolreg command. Main takes the arguments and the
// standard streams, so a test runs the real command in-process.
//
// Each subcommand lives in its own file and adds itself to the table in
// main.go; a subcommand declares its flags on its own flag.FlagSet.
//
// Exit status: 0 on success, 1 when a command has findings to report (such as
// an invalid manifest), 2 on a usage error (an unknown command or flag).
package cli
