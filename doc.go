// Package toolreg is the vocabulary of a declarative tool registry for LLM
// agents: a tool's contract (Spec) lives in a reviewed YAML or CUE manifest,
// a Go function binds to it by name at startup, and the side_effect flag splits
// the runtime in two.
//
// A read-only tool runs inline, through the runner, after its arguments are
// validated. A side-effecting tool never runs inline: Tool.Call and the runner
// refuse it with *SideEffectToolError before anything runs. It is requested as
// an intent (package intent), whose id is a pure function of the activation's
// position, and executed once, outside the pipeline, by the effector: the only
// holder of effectful functions, and the only sanctioned caller of
// Tool.Unwrap.
//
// This package holds the contract only: Spec, Tool, the errors, the schema
// (SchemaCUE). It refuses to be a way around the split: NewTool makes a
// contract with no function, and only package bindings, after checking a
// function against its manifest, can attach one. Bytes on the wire are not
// its concern: the wire format is package intent's, canonical JSON package
// canonjson's.
//
// The subpackages do one job each: loader reads manifests, bindings binds
// functions, registry resolves names, runner runs read-only tools and stages
// intents, effector executes intents once.
package toolreg
