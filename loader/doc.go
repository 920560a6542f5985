// Package loader reads tool manifests, YAML and CUE, validates each against
// the module's schema.cue (embedded as toolreg.SchemaCUE()) and returns their
// contracts as []*toolreg.Spec.
//
// A YAML file holds one tool per document (--- separates several). A CUE file
// is in package toolreg, the package of schema.cue, and declares its tools
// under the top-level tools struct, keyed by name; the CUE files of one
// directory form one package. The loader accepts exactly what
//
//	go tool cue vet -c ./...
//	go tool cue vet -c -d '#Tool' schema.cue manifests/*.yaml
//
// accept, and refuses besides what CUE cannot check:
//   - a default that breaks its own param's constraints (minimum, enum,
//     pattern, lengths, ...);
//   - an object param that declares neither properties nor
//     additionalProperties (its members would be untyped);
//   - a pattern that is not a valid regular expression;
//   - a tool name declared twice, in any two files, including two files of
//     one CUE package, which CUE would merge (*toolreg.DuplicateToolError);
//   - a YAML mapping with a key written twice, YAML merge keys (<<), tags
//     other than the JSON ones, and .inf or .nan;
//   - a CUE file outside package toolreg, or importing anything but the CUE
//     standard library.
//
// Every problem of every file comes back in one *toolreg.ToolDefinitionError,
// each with its file:line:col, tool and field path. Hostile input is refused,
// not followed: files over MaxFileSize, files that are not UTF-8 text, YAML
// alias bombs, nesting deeper than any manifest needs, and a CUE package whose
// evaluation takes over 20 seconds.
//
// Each YAML document is checked in a CUE context of its own against one
// long-lived #Tool, and YAML files and CUE packages are checked in parallel,
// so the heap does not grow with the number of manifests loaded and loading
// a thousand takes a fraction of what `cue vet` takes (scripts/bench-load.sh).
package loader
