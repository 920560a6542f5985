// Package bindings binds Go functions to tool manifests by name, at startup,
// and refuses to start when the two disagree.
//
// A tool function has one shape, func(context.Context, A) (R, error), where A
// is a struct whose exported fields, by their json names, are exactly the
// manifest's params:
//
//	b := bindings.New(specs)
//	bindings.ReadOnly(b, "lookup_customer", lookupCustomer)
//	bindings.Effect(b, "charge", charge)
//	bound, err := b.Bind()
//
// Bind checks every binding against its manifest and reports every
// disagreement at once, as one *toolreg.ToolDefinitionError whose problems
// carry the manifest's file:line, the Go type and field, and the fix. It refuses:
//
//   - a binding that names no manifest, or two bindings for one name;
//   - a manifest this process must run that has no binding;
//   - ReadOnly for a side_effect: true manifest, or Effect for a read-only one
//     (so a manifest change that flips side_effect cannot start until the code
//     agrees);
//   - an A that is not a struct, a param with no field of its json name, an
//     exported field that is no param;
//   - a field whose type cannot hold its param's values (see the table below),
//     including an untyped field (an interface such as any);
//   - an R that encoding/json cannot encode (channels, funcs, complex numbers).
//
// The field types each manifest type accepts:
//
//	string                      string kinds
//	integer                     int and uint kinds (uint kinds need minimum >= 0;
//	                            8, 16 and 32-bit kinds need minimum and maximum
//	                            inside their range)
//	number                      float32, float64
//	boolean                     bool
//	array                       a slice of an accepted element type
//	object with properties      a struct, checked by these same rules
//	object additionalProperties map[string]T, T accepted for the value schema
//
// A required param, or one with a default, takes a non-pointer field; an
// optional param without a default takes a pointer, so an absent argument
// stays distinguishable from a zero one.
//
// Bound splits the tools in two tables. Bound.Pipeline holds every tool's
// contract (name, description, schema) but the functions of read-only tools
// only: a side-effecting tool's function is never reachable from it.
// Bound.Effector holds the side-effecting tools with their functions, and
// nothing else. A process that runs one side only says so with PipelineOnly
// or EffectorOnly; then only that side's manifests need bindings, and a
// binding for the other side is refused.
package bindings
