// Package manifestschema translates schema.cue, the one contract of the
// manifest format, into a JSON Schema (2020-12) of one manifest document: the
// schema editors validate YAML manifests against as one types (the YAML
// language server's $schema modeline) and toolreg schema -manifest prints.
// schema.json at the module root is its output, written by go generate.
//
// It is not cuelang.org/go/encoding/jsonschema.Generate: in CUE v0.17 that
// generator is experimental and mistranslates schema.cue, dropping the
// per-type keywords (#keywords[type]) and turning "if side_effect == false
// { approval?: ... }" into a constraint that refuses every approval
// (TestCUEGenerateMistranslatesTheSchema keeps that claim checked).
//
// It translates the constructs schema.cue is written in, and refuses any
// other with its position, so that a new construct fails go generate rather
// than loosening the schema in silence:
//
//   - definitions (#Name) become $defs, referenced with $ref; a definition
//     used as a value is closed there (unevaluatedProperties: false), one
//     embedded in a struct is not, as CUE closes the struct that embeds it;
//   - fields: f! required, f? optional, f: x required unless x has a default
//     or is a literal CUE fills in; [L]: v (L a regular expression or
//     string) becomes patternProperties or additionalProperties;
//   - string, int, number, bool, null, _, literals, =~ and !~, != and the
//     bounds >, >=, <, <=, &, | (a *default becomes "default"), lists
//     [...x] and [x, ...], structs open with ...;
//   - an embedded #defs[field] index, a case split on field's value (if/then
//     for each key of #defs);
//   - if comprehensions whose condition compares a field of the same struct
//     with a literal or _|_, joined with &&, || and !.
//
// Top-level fields that are not definitions (tools, which holds a CUE
// manifest's tools) are not part of a manifest document, and are left out.
package manifestschema
