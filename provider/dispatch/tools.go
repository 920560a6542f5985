package dispatch

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/registry"
)

// OpenAIChatTools offers every tool of r to Chat Completions, as the request's
// tools: the "openai" form, or "openai-strict" when strict is true (a null
// for an optional param then means not given; Dispatch treats it so). It
// fails as r.ProviderSchema does for a tool the form cannot express.
func OpenAIChatTools(r *registry.Registry, strict bool) ([]openai.ChatCompletionToolUnionParam, error) {
	form := provider.OpenAI
	if strict {
		form = provider.OpenAIStrict
	}
	return decodeTools(r, form, func(p *openai.ChatCompletionToolUnionParam) bool { return p.OfFunction != nil })
}

// OpenAIResponsesTools offers every tool of r to the Responses API: the
// "openai-responses" form, or "openai-strict-responses" when strict is true.
func OpenAIResponsesTools(r *registry.Registry, strict bool) ([]responses.ToolUnionParam, error) {
	form := provider.OpenAIResponses
	if strict {
		form = provider.OpenAIStrictResponses
	}
	return decodeTools(r, form, func(p *responses.ToolUnionParam) bool { return p.OfFunction != nil })
}

// AnthropicTools offers every tool of r to the Messages API: the "anthropic"
// form.
func AnthropicTools(r *registry.Registry) ([]anthropic.ToolUnionParam, error) {
	params, err := decodeTools(r, provider.Anthropic, func(*anthropic.ToolParam) bool { return true })
	if err != nil {
		return nil, err
	}
	out := make([]anthropic.ToolUnionParam, len(params))
	for i := range params {
		out[i] = anthropic.ToolUnionParam{OfTool: &params[i]}
	}
	return out, nil
}

// decodeTools renders r's tools in form and decodes each into the SDK's
// request type T; ok reports whether T took it as a function tool.
func decodeTools[T any](r *registry.Registry, form string, ok func(*T) bool) ([]T, error) {
	raw, err := r.ProviderSchema(form)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &out[i]); err != nil || !ok(&out[i]) {
			return nil, fmt.Errorf("dispatch: the SDK type %T does not take the %s form of tool %d as a function tool (%v): %s", out[i], form, i, err, b)
		}
	}
	return out, nil
}
