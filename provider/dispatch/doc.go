// Package dispatch carries a model's tool calls through an activation and
// answers them in the model provider's own message types: OpenAI Chat
// Completions (tool_calls on an assistant message, answered by "tool"
// messages), OpenAI Responses (function_call output items, answered by
// function_call_output items) and Anthropic Messages (tool_use blocks,
// answered by tool_result blocks with is_error), through the openai-go and
// anthropic-sdk-go types.
//
// Given a *runner.Activation and the model's response, OpenAIChat,
// OpenAIResponses and Anthropic (and Dispatch, the same for calls in no
// provider's form):
//
//   - run every read-only call inline, concurrently through the activation's
//     runner (Activation.RunAll), outcomes in call order, each span with its
//     call's id as gen_ai.tool.call.id;
//   - stage every side-effecting call with Activation.ActContext, in call
//     order, so a replayed response stages the same intents, each carrying
//     its call's id (intent.Intent.ToolCallID, which the effector's span
//     records); nothing side-effecting runs;
//   - answer each call, in call order, with the message to append: a read-only
//     tool's result as canonical JSON; a staged effect's intent id; a refused
//     call's reason, written for the model, flagged as an error where the
//     provider has a flag (Anthropic's is_error).
//
// A call is refused, not run and not staged, with a message that tells the
// model what to fix, when its tool is unknown (with the names it may have
// meant), when its arguments are not JSON or break the tool's contract
// (toolreg.ToolArgumentError's ModelMessage), when it is not a function call
// (an OpenAI custom tool call), and when it repeats, in the same response, a
// side-effecting call already staged (same tool, same canonical arguments):
// a model that emits one refund twice in one response gets one refund. A
// strict-form null for an optional param means the param was not given, as
// package provider documents, so the tool sees its default.
//
// A response is refused whole, running nothing and staging nothing, with a
// *ResponseError when two of its calls share an id or a call has none: the
// provider pairs results with calls by id, so such a response cannot be
// answered. A response with no tool calls (the model answered in text) gives
// a Turn with no outcomes and no messages: the conversation's turn is over.
//
// An error that is not the model's to fix (the activation has no clock or was
// drained, ctx ended) is returned as the error, and the activation must then
// not be drained.
//
// A staged effect's result comes later, from the effector. Turn.Resolve, or
// OpenAIChatResult, OpenAIResponsesResult and AnthropicResult in a later
// activation, render an intent.Result as the answer to the call that staged
// it: the payload of an OK result, and for the others a message saying what
// happened (failed with its effect unknown, expired or refused with nothing
// done), flagged as an error.
//
// OpenAIChatTools, OpenAIResponsesTools and AnthropicTools offer a registry's
// tools to the model in the provider's form (package provider's rendering),
// as the SDK's own request types.
package dispatch
