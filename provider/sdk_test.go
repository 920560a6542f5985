package provider_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// sdkRoundTrip decodes a rendered tool into the provider SDK's own request
// type, encodes that back, and returns the bytes. A key the SDK type does not
// know, or knows by another name, does not survive the trip.
var sdkRoundTrip = map[string]func(t *testing.T, raw []byte) []byte{
	provider.OpenAI:                openAIChat,
	provider.OpenAIStrict:          openAIChat,
	provider.OpenAIResponses:       openAIResponses,
	provider.OpenAIStrictResponses: openAIResponses,
	provider.Anthropic: func(t *testing.T, raw []byte) []byte {
		var p anthropic.ToolParam
		return trip(t, raw, &p)
	},
	provider.AnthropicStrict: func(t *testing.T, raw []byte) []byte {
		var p anthropic.ToolParam
		out := trip(t, raw, &p)
		if !p.Strict.Valid() || !p.Strict.Value {
			t.Fatalf("anthropic-sdk-go does not read strict: true from %s", raw)
		}
		return out
	},
	provider.MCP: func(t *testing.T, raw []byte) []byte {
		var p mcp.Tool
		return trip(t, raw, &p)
	},
}

func openAIChat(t *testing.T, raw []byte) []byte {
	var p openai.ChatCompletionToolUnionParam
	out := trip(t, raw, &p)
	if p.OfFunction == nil {
		t.Fatalf("openai-go took %s as another kind of tool than a function", raw)
	}
	return out
}

func openAIResponses(t *testing.T, raw []byte) []byte {
	var p responses.ToolUnionParam
	out := trip(t, raw, &p)
	if p.OfFunction == nil {
		t.Fatalf("openai-go took %s as another kind of Responses tool than a function", raw)
	}
	return out
}

func trip(t *testing.T, raw []byte, p any) []byte {
	t.Helper()
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatalf("the SDK type %T refuses the rendered tool: %v\n%s", p, err, raw)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("the SDK type %T cannot encode what it decoded: %v", p, err)
	}
	return out
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return v
}

func TestEveryFormSurvivesItsProvidersSDKType(t *testing.T) {
	t.Parallel()
	for _, form := range provider.Forms() {
		trip, ok := sdkRoundTrip[form]
		if !ok {
			// No Gemini SDK in this module: see TestGeminiFormKeepsToItsSubset
			// and TestGeminiJSONSchemaFormKeepsToTheDocumentedSubset.
			if form != provider.Gemini && form != provider.GeminiJSONSchema {
				t.Errorf("form %s has no SDK round trip: add its provider SDK's tool type to sdkRoundTrip", form)
			}
			continue
		}
		for _, s := range allSpecs(t) {
			r, err := provider.Render(form, s)
			if err != nil {
				// Forms that refuse a tool are tested in TestFormsRefuseWhatTheyCannotExpress.
				continue
			}
			t.Run(form+" form of "+s.Name+" decodes into the SDK type and encodes back unchanged", func(t *testing.T) {
				t.Parallel()
				got := trip(t, r.JSON)
				if diff := cmp.Diff(decode(t, r.JSON), decode(t, got)); diff != "" {
					t.Errorf("lost or renamed by the SDK type (-rendered +after SDK):\n%s", diff)
				}
			})
		}
	}
}

// The round trip must be able to fail: a key the SDK type does not know is
// lost, and the comparison shows it.
func TestSDKRoundTripCatchesARenamedKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		form string
		raw  string
	}{
		{provider.Anthropic, `{"name":"x","description":"d","inputSchema":{"type":"object"}}`},
		{provider.MCP, `{"name":"x","input_schema":{"type":"object"},"inputSchema":{"type":"object"}}`},
		{provider.OpenAI, `{"type":"function","function":{"name":"x","params":{"type":"object"}}}`},
		{provider.OpenAIResponses, `{"type":"function","name":"x","parameters":{},"strict":false,"strictness":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.form+" loses a key its SDK type does not know", func(t *testing.T) {
			t.Parallel()
			got := sdkRoundTrip[tt.form](t, []byte(tt.raw))
			if cmp.Equal(decode(t, []byte(tt.raw)), decode(t, got)) {
				t.Errorf("%s came back unchanged as %s; the round trip cannot see a renamed key", tt.raw, got)
			}
		})
	}
}

// decodeStrict returns the strict form's parameters, checking the SDK reads
// strict: true.
func strictParams(t *testing.T, s *toolreg.Spec) map[string]any {
	t.Helper()
	r, err := provider.Render(provider.OpenAIStrict, s)
	if err != nil {
		t.Fatal(err)
	}
	var p openai.ChatCompletionToolUnionParam
	trip(t, r.JSON, &p)
	if !p.OfFunction.Function.Strict.Valid() || !p.OfFunction.Function.Strict.Value {
		t.Fatalf("openai-go does not read strict: true from %s", r.JSON)
	}
	return decode(t, r.JSON).(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any)
}
