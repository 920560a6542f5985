// Package provider renders one tool contract (a toolreg.Spec) in the form each
// model provider accepts, says what a form loses, and vets a set of tools for
// what a provider would refuse or degrade.
//
// The forms, by name (see Forms):
//
//   - "openai": a Chat Completions function tool,
//     {"type":"function","function":{"name","description","parameters"}};
//   - "openai-responses": the Responses API function tool,
//     {"type":"function","name","description","parameters","strict":false};
//   - "openai-strict" and "openai-strict-responses": the same two with
//     strict: true. Every object is closed and lists every property in
//     required; a param the manifest makes optional becomes nullable
//     ("type":["integer","null"]), and null then means "not given"; keywords
//     strict mode does not support (default, minLength, maxLength, uniqueItems,
//     formats other than the nine it knows) move into the description;
//   - "anthropic": {"name","description","input_schema"};
//   - "anthropic-strict": the same with "strict": true (Claude's strict tool
//     use), in its supported subset: every object closed, optional params
//     left optional; numeric bounds, multipleOf, string lengths, maxItems,
//     uniqueItems, minItems above 1, formats it does not list and patterns
//     with a word boundary move into the description; an open map is refused.
//     A request takes at most 20 strict tools and 24 optional params across
//     them (Vet reports more as errors);
//   - "gemini": a function declaration {"name","description","parameters"} in
//     Gemini's OpenAPI schema subset: exclusiveMinimum/Maximum, multipleOf,
//     uniqueItems, format and non-string enums move into the description, and
//     additionalProperties is left out;
//   - "gemini-jsonschema": a function declaration {"name","description",
//     "parametersJsonSchema"}, the field that takes JSON Schema: open maps and
//     closed objects as JSON Schema writes them; what Gemini's documented
//     JSON Schema subset does not list (default, string lengths, pattern,
//     exclusive bounds, multipleOf, uniqueItems, formats other than
//     date-time, date and time) moves into the description. There is no
//     Gemini SDK in this module: the form is tested against that documented
//     subset, not round-tripped;
//   - "mcp": an MCP tools/list entry {"name","title","description",
//     "inputSchema","annotations"}, with readOnlyHint = !side_effect,
//     idempotentHint = !side_effect unless the manifest's annotations say
//     otherwise, and the other hints (title, destructiveHint, openWorldHint)
//     where the manifest gives them.
//
// Rendering never changes what toolreg accepts: arguments are validated
// against the manifest whatever form the model saw. A form that drops a
// constraint only stops the provider from enforcing it; each such change is
// reported as a Note. A form without strict mode (openai, openai-responses,
// anthropic, gemini, gemini-jsonschema) keeps constraints the provider does
// not hold the model's arguments to: each is reported as a NotEnforced note
// (Gemini's default, which it ignores, included), so no one believes the
// provider checks them.
//
// A tool that cannot be made strict (an object param that is an open map, a
// schema nested deeper than strict mode allows, ...) is refused with an
// *UnsupportedError that says why; it is not silently sent non-strict.
//
// # Sources of the rules
//
//   - OpenAI, Structured Outputs guide, "Supported schemas"
//     (https://platform.openai.com/docs/guides/structured-outputs): the
//     keywords and formats strict mode takes, every object closed and every
//     property required, at most 5,000 properties and 10 levels of nesting,
//     1,000 enum values, 15,000 characters in one string enum of more than
//     250 values, 120,000 characters of property names, enum and const
//     values. Function calling guide: strict: false is best effort. API
//     reference and openai-go's FunctionDefinitionParam: a name of 1 to 64
//     of a-z, A-Z, 0-9, '_' and '-', no documented limit on the description
//     (hence a warning, not an error, past 1,024 characters), at most 128
//     tools.
//   - Anthropic, "Strict tool use" and Structured outputs, "JSON Schema
//     limitations" (https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use,
//     https://platform.claude.com/docs/en/build-with-claude/structured-outputs):
//     additionalProperties false on every object; no numeric or string-length
//     constraints, no array constraint but minItems 0 or 1; the formats
//     listed in claudeFormats; enums of scalars; patterns without
//     backreferences, lookaround or word boundaries; at most 20 strict tools
//     and 24 optional params per request. Without strict, Claude may send
//     arguments of the wrong type or without required fields.
//   - Gemini API reference, FunctionDeclaration and Schema
//     (https://ai.google.dev/api/caching#FunctionDeclaration): the name rule;
//     parametersJsonSchema, JSON Schema describing an object, exclusive of
//     parameters; Schema.default is taken "and ignored". Structured output,
//     "JSON Schema support" (https://ai.google.dev/gemini-api/docs/structured-output):
//     the JSON Schema subset. Function calling modes
//     (https://ai.google.dev/gemini-api/docs/function-calling): only
//     VALIDATED holds calls to the schema. There is no Gemini SDK in this
//     module: both Gemini forms are tested against these documented subsets.
//   - MCP 2025-11-25, Tools (https://modelcontextprotocol.io/specification/2025-11-25/server/tools):
//     annotations and their defaults, listChanged, the tool name rule.
package provider
