// Package sariftest validates SARIF logs in tests against the published
// SARIF 2.1.0 JSON schema, embedded (README.md says where the copy comes
// from), so no test reaches the network. It validates; it does not write
// SARIF (package diag does).
package sariftest
