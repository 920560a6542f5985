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
//   - a pattern that is not a valid regular expression, or that RE2 and
//     ECMA-262 (with the u flag) read differently (see internal/pattern);
//   - an integer default or enum value beyond 64 bits;
//   - a tool name declared twice, in any two files, including two files of
//     one CUE package, which CUE would merge (*toolreg.DuplicateToolError);
//   - a YAML mapping with a key written twice, YAML merge keys (<<), tags
//     other than the JSON ones, and .inf or .nan;
//   - a CUE file outside package toolreg, or importing anything but the CUE
//     standard library.
//
// Every independent problem of every document and file comes back in one
// run, in one *toolreg.ToolDefinitionError sorted by file:line:col, each with
// its tool and field path: CUE's own errors, the loader's rules (checked on
// every part of a tool the schema did not refuse), and a YAML syntax error at
// the line and column of its token, which ends only its own document. Files
// are named as the paths given name them (./manifests/a.yaml stays so).
//
// Hostile input is refused, not followed, and never quoted at length (a
// value is cut to 64 bytes in a message, a message to 1 KiB): files over
// MaxFileSize; files that are not UTF-8 text (at the line:col of the first
// bad byte); anything but a regular file (a FIFO is refused without being
// waited on); a symbolic link whose target is outside the directory given
// (for a file named alone, outside its own directory); YAML alias bombs;
// nesting deeper than any manifest needs; a number no float64 holds; and a
// CUE package over the budget of work checked before it is evaluated: 10,000
// comprehension iterations (nested ones multiplied out), 1,000 disjuncts per
// value, comprehensions only over what the syntax can size, and values that
// nest operators and references more than 256 deep. The budget sizes each
// label once, however many values name it, so its own check grows linearly
// with the package (a chain of values each naming the one before twice is
// checked at once, not 2^n times). The whole CUE step of a package, the
// budget, CUE's evaluation and the decoding of its tools, is under one time
// bound of 5 seconds: a package past it is refused, naming what was being
// checked and where (the declaration, the costliest construct by the
// budget's count, or the tool).
//
// A YAML tool's params are checked against the schema in chunks of 64, and a
// param shape accepted once is not checked again, so time and memory grow
// linearly with its params: a legal 1 MiB file of 40,000 params loads in
// about 0.3 s of CPU and 100 MB (20,000 params of distinct shapes: 1.4 s,
// 92 MB). The params of one CUE package, which CUE evaluates whole, grow
// faster: the budget of work and the 1 MiB file limit bound them.
//
// Each YAML document is checked in a CUE context of its own against one
// long-lived #Tool, and YAML files and CUE packages are checked in parallel,
// so the heap does not grow with the number of manifests loaded and loading
// a thousand takes a fraction of what `cue vet` takes (scripts/bench-load.sh).
package loader
