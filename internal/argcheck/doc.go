// Package argcheck validates a tool call's JSON arguments against the tool's
// parameters JSON Schema and normalizes them for decoding. It is the one
// implementation behind toolreg's Tool.CheckArgs, the runner, Act and the
// effector, so every path accepts and refuses the same calls.
//
// A Checker is compiled once per tool (Compile) from the schema toolreg
// renders: a closed object with properties, required and
// additionalProperties: false; nested objects and arrays; default, enum,
// minimum/maximum (also exclusive), multipleOf, minLength/maxLength,
// pattern, format, minItems/maxItems, uniqueItems. Validation proper is
// santhosh-tekuri/jsonschema/v6 with format assertions on. Check does, in
// order:
//
//  1. Parse. Empty arguments (only whitespace) and a bare null mean no
//     arguments, {}: models calling a tool without params send either.
//     Malformed JSON, text after the value, and a value that is not an
//     object are refused, in words a model can act on rather than
//     encoding/json's: where (line, column, byte offset, and up to 40 bytes
//     of the text before it), what JSON wanted there ("',' or '}' after a
//     member's value"), what came, and to send one JSON object and nothing
//     else.
//  2. Guard. A number longer than 400 characters or with an exponent of
//     1000 or more is refused wherever it appears, before exact rational
//     arithmetic could spend unbounded time on it (1e999999999).
//  3. Normalize, recursively through object properties, additionalProperties
//     and array items: a null for a member that is not required (it has a
//     default or is optional) is dropped, so it means absent, which is what
//     OpenAI's strict mode sends for an optional param; a null for a required
//     member stays and is refused. Absent members with a default get it.
//     Scalars are coerced by the table below unless the Checker is strict.
//  4. Validate the result against the schema, and report every problem found,
//     each as a Problem with a JSON Pointer path, what the schema wants and
//     what came: unknown keys, missing required members, wrong types, broken
//     constraints.
//
// Lax coercion follows Pydantic v2's conversion table for JSON input where
// that is safe:
//
//	schema type  accepted
//	integer      JSON integers; numbers with a zero fraction (10.0, 1e2);
//	             strings holding an integer, with optional surrounding
//	             whitespace, sign and decimal zeros (" +10 ", "10.00"; not
//	             "1e3" or "1_000"); true and false as 1 and 0
//	number       JSON numbers; strings holding a decimal number ("2.5",
//	             "-1e3", ".5", " 2.5 "; not "nan", "inf", hex, underscores,
//	             or a value beyond float64 such as "1e400");
//	             true and false as 1 and 0
//	boolean      true and false; the numbers 0 and 1 (0.0 and 1.0 too);
//	             the strings "0", "off", "f", "false", "n", "no", "1", "on",
//	             "t", "true", "y", "yes" in any letter case
//	string       strings only
//	array        arrays only, items coerced by their own type
//	object       objects only, members coerced by their own type
//
// It differs from Pydantic v2's lax mode on purpose (the README's "Argument
// coercion" tables list each difference, and readme_coercion_test.go tests
// each): Pydantic accepts "1_000" for an int and "nan", "inf", "-inf",
// "1_000" and "1e400" (as infinity) for a float; it drops unknown keys, which
// toolreg refuses (the effector can drop them for chosen tools:
// effector.WithDropUnknownKeys); it refuses null for a field with a non-null
// default, which toolreg takes as absent; it checks multipleOf in floating
// point with a tolerance, where toolreg is exact on the number's decimal
// text; it refuses "1" for Literal[1, 2, 3], which toolreg coerces before
// checking the enum; and its strict mode refuses 10.0 for an int, which
// toolreg's strict mode takes as 10.
//
// A value that cannot be coerced stays as it came, and validation reports
// it. A strict Checker coerces nothing; it still writes an integral number
// such as 10.0 as 10, since JSON Schema counts both as integers and Go's
// decoder takes only the second. A null-for-optional is absent in strict mode
// too: it is how a caller says "not given", not a loosely typed value.
//
// Two fast paths take the common call, a JSON object whose values have their
// declared types or coerce simply, in one pass over its text with no
// intermediate map:
//
//   - Checker.Plan compiles a Checker together with a Go struct type into a
//     decoder that validates while it decodes straight into the struct (the
//     runner's and the effector's path);
//   - Checker.Canonical writes the normalized arguments as canonical JSON
//     (toolreg's Tool.CheckArgs, hence Act), with the pieces package
//     canonjson, the format's owner, gives it (AppendString, AppendNumber):
//     it decides what to write, never how.
//
// Whatever they are not sure of (exponents in integers, escaped or repeated
// keys, keywords toolreg does not render, any invalid call) they hand back,
// and the caller takes the reference path: Check, then canonjson.Marshal,
// then encoding/json. Differential fuzz tests (in package bindings and in
// toolreg) hold each fast path to the reference's results.
package argcheck
