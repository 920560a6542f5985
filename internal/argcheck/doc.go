// Package argcheck validates a tool call's JSON arguments against the tool's
// parameters JSON Schema, the way toolreg's Tool.CheckArgs, the runner and the
// effector all do, and normalizes them for decoding.
//
// A Checker is compiled once per tool from the schema toolreg renders (a
// closed object with properties, required and additionalProperties: false;
// nested objects and arrays; default, enum, minimum/maximum, lengths, pattern,
// format, uniqueItems ...). Validation proper is santhosh-tekuri/jsonschema/v6,
// with format assertions on. Before it, the checker
//
//   - reads empty arguments (only whitespace) and a bare null as {};
//
//   - drops a null given for a member that is not required (it has a default
//     or is optional): a null means absent, as OpenAI's strict mode sends for
//     optional params; a null for a required member stays and is refused;
//
//   - applies defaults to absent members, recursively inside present objects;
//
//   - coerces scalars as Pydantic v2's lax mode does, recursively inside
//     arrays, object properties and additionalProperties, unless compiled
//     strict:
//
//     integer  JSON integers; numbers with a zero fraction (10.0, 1e2); strings
//     holding an integer (" +10 ", "10.00": surrounding whitespace,
//     a sign and trailing decimal zeros allowed); true and false as
//     1 and 0
//     number   JSON numbers; strings holding a decimal number ("2.5", "-1e3",
//     ".5"; not "nan", "inf", hex or underscores); true and false
//     boolean  true and false; the numbers 0 and 1 (also 0.0 and 1.0); the
//     strings '0','off','f','false','n','no','1','on','t','true',
//     'y','yes' in any letter case
//     string   strings only
//
//     A value that cannot be coerced is left as it came, and the validator
//     reports it. Strict mode coerces nothing, but still writes an integral
//     number such as 10.0 as 10 (JSON Schema counts both as integers).
//
//   - refuses numbers longer than 400 characters or with an exponent of 1000
//     or more, wherever they appear, before exact arithmetic could spend
//     unbounded time on them.
//
// Every problem found is reported, each as a Problem with a JSON Pointer path,
// what the schema wants and what came: unknown keys, missing required members,
// wrong types, broken constraints, malformed JSON, arguments that are not an
// object.
//
// Plan compiles a Checker together with a Go struct type into a decoder that
// validates while it decodes straight into the struct, for the common valid
// call; whatever it is not sure of it hands back to Check, so its answers are
// the same (a differential fuzz test holds it to that).
package argcheck
