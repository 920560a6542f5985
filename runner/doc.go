// Package runner runs read-only tools inline, inside the pipeline, and stages
// requests for side-effecting ones.
//
// Runner.Run is the inline path. For a read-only tool it validates the JSON
// arguments against the tool's contract (coercing as Pydantic v2's lax mode
// does unless the manifest says strict), applies defaults, decodes them into
// the function's argument struct, calls the function and returns its result.
// It refuses:
//
//   - a side-effecting tool, with *toolreg.SideEffectToolError, before it looks
//     at the arguments; the function is never invoked (a side effect run inline
//     runs again on every retry of the activation);
//   - arguments that break the contract, with *toolreg.ToolArgumentError
//     listing every failing path; the function is never invoked, and the
//     error's ModelMessage can go back to the model as the tool's result;
//   - a call whose ctx is already done; the function is never invoked.
//
// A function that panics gives a *toolreg.ToolPanicError naming the tool; the
// process goes on.
//
// Go has no coroutines: what an async def tool gives in Python, a Go tool
// gives with its ctx (cancellation, deadlines), and Runner.RunAll runs several
// read-only calls concurrently (a model's parallel tool calls), returning the
// outcomes in call order.
//
// Results come back as any, since one table holds tools of many types;
// Result[R] gives one as its function's type R, or a *ResultTypeError naming
// both types.
//
// A side-effecting tool is requested instead through an Activation, which
// stages an intent (package intent) that the effector executes once, outside
// the pipeline: Act, or ActContext for a call a model made, whose tool call
// id (WithCallID) the intent keeps for the effector's span.
package runner
