// Package canonjson owns beam-agents canonical JSON, the one byte form of a
// JSON value that toolreg writes where bytes must be the same for the same
// value: the arguments an intent carries (intent.Intent.ArgsJSON), an OK
// result's payload, a tool's JSON Schema. Object keys are sorted by code
// point, there is no space, text stays UTF-8 (only the quote, the backslash
// and control characters are escaped; invalid UTF-8 becomes U+FFFD),
// integers keep every digit and other numbers are written as Python's float
// repr writes them ("10.0", "1e-07"). NaN and infinities are refused.
//
// A Go float64 in a generic value (alone, or in a map[string]any or []any, as
// the argument checker's normalized arguments hold it) is a float, so 10 is
// written "10.0"; a float field of a struct is written as encoding/json
// writes it, and an integral one ("10") then reads as an integer.
//
// Marshal and Canonicalize are the two entry points. The reference path is
// one: decode into Go's generic values and write them out. Beside it are two
// fast paths, each leaving to the reference whatever it is not sure of, and
// each held to the reference's bytes by fuzz tests: a one-pass rewrite of
// JSON text (Canonicalize's, and Marshal's after encoding/json), and an
// encoder cached per Go type for structs of plain fields (names of letters,
// digits and '_', at most omitempty), the results tool functions return,
// which skips encoding/json's text. Every other tag rule, MarshalJSON method
// and embedded field is left to encoding/json itself. AppendString,
// AppendFloat and AppendNumber are the pieces a one-pass writer elsewhere
// (the argument checker's) builds the same bytes from.
//
// It refuses what JSON cannot hold (NaN, an infinity, a cycle), text that is
// not exactly one JSON value, and it does not validate against any schema:
// that is the argument checker's job.
package canonjson
