// Package diag is the one owner of the diagnostics toolreg's checkers report
// to machines: the model (Diagnostic, a finding at a file, line and column,
// with a severity and the rule that found it) and its encoders, each selected
// by the same -format value on every command (toolreg vet, toolreg diff,
// effectcheck):
//
//	github  GitHub Actions workflow commands (::error file=...,line=...::msg),
//	        escaped as the runner requires, so each finding is an annotation
//	        on the line of the pull request that has it
//	sarif   one SARIF 2.1.0 log, for code scanning and the many tools that
//	        read it
//	jsonl   one JSON object a line, for scripts
//
// The human text each command prints is its own; this package does not
// render it. It refuses nothing it is given: a diagnostic with no file is
// written without a location.
package diag
