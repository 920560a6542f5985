// Package gen generates, from tool manifests, the Go argument struct of each
// tool and a typed binding helper per tool, so the Go side follows the
// manifest by construction: generated code always binds without a
// ToolDefinitionError.
//
// For each tool it writes:
//   - a struct <Tool>Args with one field per param, json tags by param name and
//     doc comments from descriptions; a pointer field for an optional param
//     without a default (absent stays distinguishable from zero), a plain
//     field otherwise;
//   - a named type with constants for each enum, a named struct for each
//     object param with properties, map[string]T for additionalProperties;
//   - a const Name<Tool> holding the tool's name, for Act and the runner;
//   - Bind<Tool>, which binds a function to the tool with bindings.ReadOnly or
//     bindings.Effect, as the manifest's side_effect says.
//
// It refuses what has no Go type: an array without items, an object with
// neither properties nor additionalProperties.
package gen
