// Command support-agent is toolreg's example agent service: a customer-support
// agent whose tools are declared in ../../manifests and bound to Go functions
// at startup.
//
// It talks to the model through openai-go, the official OpenAI SDK, and
// carries the model's tool calls through an activation with package
// provider/dispatch: read-only tools run inline through the runner,
// side-effecting ones are staged as intents with Act, and every call is
// answered with a tool message. After the activation succeeds its intents are
// drained, sent as beam-agents wire bytes to the effector, and executed once,
// with a SQLite dedup store in a state directory; each result is shown as the
// tool message that answers its call in the next turn. Then it replays the
// same activation, as a retried bundle would, to show that the refund is not
// executed twice. Run it again and the store remembers: nothing runs twice
// across processes either.
//
// By default the model is the scripted conversation (conversation.json),
// served as real Chat Completions responses by an OpenAI-compatible endpoint
// the program starts in-process: no network, no key, the same output every
// run, and still the SDK's own request encoding and response decoding. With
// OPENAI_API_KEY set it talks to that model instead (OPENAI_BASE_URL for any
// compatible server, -model for its name), and the replay is served the
// replies the model gave, as a retried bundle replays its recorded inputs.
//
// With -provider anthropic it talks to the model through anthropic-sdk-go,
// the official Anthropic SDK, with dispatch.Anthropic: the same script,
// served offline as Messages API responses by an in-process endpoint, or,
// with ANTHROPIC_API_KEY set, a real Claude model (ANTHROPIC_BASE_URL,
// -model; claude-sonnet-4-5 by default). The intents it stages are the same
// bytes either way.
//
//	go run ./examples/support-agent [-provider openai|anthropic] [-manifests dir] [-state dir] [-script file] [-model name] [-offline]
package main
