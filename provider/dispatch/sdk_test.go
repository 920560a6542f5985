package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// endpoint is an in-process model API: it answers the i-th POST to its path
// with the i-th recorded response and keeps every request body, as the SDK
// encoded it.
type endpoint struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests [][]byte
}

func newEndpoint(t *testing.T, path string, responses ...[]byte) *endpoint {
	t.Helper()
	e := &endpoint{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != path || err != nil {
			http.Error(w, fmt.Sprintf(`{"error":{"message":"no route %s %s"}}`, r.Method, r.URL.Path), http.StatusNotFound)
			return
		}
		e.mu.Lock()
		e.requests = append(e.requests, body)
		n := len(e.requests)
		e.mu.Unlock()
		if n > len(responses) {
			http.Error(w, `{"error":{"message":"the recording has no more responses"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(responses[n-1])
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// request returns the i-th request body, decoded.
func (e *endpoint) request(t *testing.T, i int) map[string]json.RawMessage {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if i >= len(e.requests) {
		t.Fatalf("the endpoint got %d requests; want at least %d", len(e.requests), i+1)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.requests[i], &m); err != nil {
		t.Fatalf("request %d is not a JSON object: %v", i, err)
	}
	return m
}

func recorded(t *testing.T, dir string) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded responses in testdata/%s: %v", dir, err)
	}
	out := make([][]byte, len(files))
	for i, f := range files {
		if out[i], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// indent renders raw JSON for a golden file, keeping the SDK's key order.
func indent(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test -update to write it", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// sameJSON fails unless a and b hold the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
	if diff := cmp.Diff(va, vb); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// execute is the effector: it processes each intent once, through an
// in-memory dedup store, and returns the results.
func (a *agent) execute(t *testing.T, ins []*intent.Intent) []*intent.Result {
	t.Helper()
	eff, err := effector.New(a.bound.Effector, effector.NewMemoryStore(),
		effector.WithClock(func() time.Time { return eventTime.Add(time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*intent.Result, len(ins))
	for i, in := range ins {
		r, err := eff.Process(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &r
	}
	return out
}

// The same response in every provider's form: each call's fate.
var wantStatuses = []string{
	"lookup ran",
	"search ran", // refused in the Anthropic recording: its limit is "ten"
	"typo refused",
	"bad refused",
	"refund staged",
	"refund_again refused",
	"email staged",
	"bounce staged",
}

var wantIntents = []string{
	`refund_order {"amount":49.9,"order_id":"ord_1"}`,
	`send_email {"subject":"Your refund","to":"ada@example.test"}`,
	`send_email {"subject":"Your refund","to":"bob@example.invalid"}`,
}

var wantEffects = []string{
	`refund_order {"order_id":"ord_1","amount":49.9,"note":null}`,
	`send_email {"to":"ada@example.test","subject":"Your refund"}`,
	`send_email {"to":"bob@example.invalid","subject":"Your refund"}`,
}

// checkTurn checks what every provider's recording must give: the calls'
// statuses (ids without their provider prefix), the functions invoked, and
// the intents staged, then runs the effector on them.
func checkTurn(t *testing.T, a *agent, act *runner.Activation, outs []dispatch.Outcome, prefix string, wantStatus []string, wantCalls []string) []*intent.Result {
	t.Helper()
	got := statuses(outs)
	for i := range got {
		got[i] = strings.TrimPrefix(got[i], prefix)
	}
	if diff := cmp.Diff(wantStatus, got); diff != "" {
		t.Errorf("the calls' statuses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCalls, a.calls()); diff != "" {
		t.Errorf("functions invoked (-want +got):\n%s", diff)
	}
	if got := a.ranEffects(); len(got) != 0 {
		t.Fatalf("effect functions ran before the effector: %v", got)
	}
	ins, err := act.Drain()
	if err != nil {
		t.Fatal(err)
	}
	staged := make([]string, len(ins))
	for i, in := range ins {
		staged[i] = in.ToolName + " " + string(in.ArgsJSON)
		if want := intent.IntentID([]byte("ticket-4711"), 1, uint32(i)); in.ID != want {
			t.Errorf("intent %d has id %s; want IntentID(ticket-4711, 1, %d) = %s", i, in.ID, i, want)
		}
	}
	if diff := cmp.Diff(wantIntents, staged); diff != "" {
		t.Errorf("intents staged (-want +got):\n%s", diff)
	}
	results := a.execute(t, ins)
	if diff := cmp.Diff(wantEffects, a.ranEffects()); diff != "" {
		t.Errorf("effects the effector ran (-want +got):\n%s", diff)
	}
	return results
}

// checkTools checks that the tools a request offered are the registry's
// rendering in form, unchanged by the SDK.
func checkTools(t *testing.T, a *agent, form string, sent json.RawMessage) {
	t.Helper()
	list, err := a.bound.Pipeline.ProviderList(form)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the tools the SDK sent, against the registry's "+form+" form", list, sent)
}

var readCalls = []string{
	`lookup_customer {"customer_id":"cus_ada"}`,
	`search_orders {"customer_id":"cus_ada","status":null,"limit":10}`,
}

func TestOpenAIChatCompletionsThroughTheSDK(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	ep := newEndpoint(t, "/v1/chat/completions", recorded(t, "openai-chat")...)
	client := openai.NewClient(option.WithBaseURL(ep.srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	tools, err := dispatch.OpenAIChatTools(a.bound.Pipeline, true)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(msgs []openai.ChatCompletionMessageParamUnion) openai.ChatCompletionMessage {
		t.Helper()
		c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4.1-mini", Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return c.Choices[0].Message
	}
	act := a.activation()
	conv := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("I was charged twice for order ord_1. Refund the duplicate and email me, and my friend bob.")}
	reply := ask(conv)
	turn, err := dispatch.OpenAIChat(ctx, act, reply)
	if err != nil {
		t.Fatal(err)
	}
	conv = append(conv, reply.ToParam())
	final := ask(append(slices.Clone(conv), turn.Messages...))
	if last, err := dispatch.OpenAIChat(ctx, act, final); err != nil || len(last.Messages) != 0 {
		t.Errorf("a reply without tool calls gave %d messages, %v; want none", len(last.Messages), err)
	}
	results := checkTurn(t, a, act, turn.Outcomes, "call_", wantStatuses, readCalls)
	resolved, err := turn.Resolve(results...)
	if err != nil {
		t.Fatal(err)
	}
	ask(append(slices.Clone(conv), resolved...))

	checkTools(t, a, provider.OpenAIStrict, ep.request(t, 0)["tools"])
	var sent [3][]json.RawMessage
	for i := range sent {
		if err := json.Unmarshal(ep.request(t, i)["messages"], &sent[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent[1]) != 2+len(wantStatuses) || len(sent[2]) != len(sent[1]) {
		t.Fatalf("requests sent %d and %d messages; want the user's, the assistant's and one per call", len(sent[1]), len(sent[2]))
	}
	golden(t, "openai-chat.golden", "== appended after the tool calls, as the SDK sent them ==\n"+
		indent(t, jsonArray(sent[1][2:]))+"\n== once the effector is done: Resolve ==\n"+indent(t, jsonArray(sent[2][2:]))+"\n")

	// A later activation renders a result without the turn.
	for i, o := range turn.Outcomes {
		if o.Status != dispatch.Staged {
			continue
		}
		r := resultFor(t, results, o.Intent.ID)
		got, _ := json.Marshal(dispatch.OpenAIChatResult(o.Call.ID, r))
		want, _ := json.Marshal(resolved[i])
		sameJSON(t, "OpenAIChatResult against Resolve for "+o.Call.ID, want, got)
	}
}

func TestOpenAIResponsesThroughTheSDK(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	ep := newEndpoint(t, "/v1/responses", recorded(t, "openai-responses")...)
	client := openai.NewClient(option.WithBaseURL(ep.srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	tools, err := dispatch.OpenAIResponsesTools(a.bound.Pipeline, true)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(prev string, items responses.ResponseInputParam) *responses.Response {
		t.Helper()
		p := responses.ResponseNewParams{Model: "gpt-4.1-mini", Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		r, err := client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	act := a.activation()
	first := ask("", responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("I was charged twice for order ord_1. Refund the duplicate and email me, and my friend bob.", responses.EasyInputMessageRoleUser)})
	turn, err := dispatch.OpenAIResponses(ctx, act, first)
	if err != nil {
		t.Fatal(err)
	}
	final := ask(first.ID, turn.Messages)
	if last, err := dispatch.OpenAIResponses(ctx, act, final); err != nil || len(last.Messages) != 0 {
		t.Errorf("a response without function calls gave %d items, %v; want none", len(last.Messages), err)
	}
	results := checkTurn(t, a, act, turn.Outcomes, "call_", wantStatuses, readCalls)
	resolved, err := turn.Resolve(results...)
	if err != nil {
		t.Fatal(err)
	}
	ask(first.ID, resolved)

	checkTools(t, a, provider.OpenAIStrictResponses, ep.request(t, 0)["tools"])
	if got := string(ep.request(t, 1)["previous_response_id"]); got != `"`+first.ID+`"` {
		t.Errorf("the second request chained to %s; want %q", got, first.ID)
	}
	golden(t, "openai-responses.golden", "== appended after the function calls, as the SDK sent them ==\n"+
		indent(t, ep.request(t, 1)["input"])+"\n== once the effector is done: Resolve ==\n"+indent(t, ep.request(t, 2)["input"])+"\n")

	for i, o := range turn.Outcomes {
		if o.Status != dispatch.Staged {
			continue
		}
		got, _ := json.Marshal(dispatch.OpenAIResponsesResult(o.Call.ID, resultFor(t, results, o.Intent.ID)))
		want, _ := json.Marshal(resolved[i])
		sameJSON(t, "OpenAIResponsesResult against Resolve for "+o.Call.ID, want, got)
	}
}

func TestAnthropicMessagesThroughTheSDK(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	ep := newEndpoint(t, "/v1/messages", recorded(t, "anthropic")...)
	client := anthropic.NewClient(aoption.WithBaseURL(ep.srv.URL), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	tools, err := dispatch.AnthropicTools(a.bound.Pipeline)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(msgs []anthropic.MessageParam) *anthropic.Message {
		t.Helper()
		m, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	act := a.activation()
	conv := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("I was charged twice for order ord_1. Refund the duplicate and email me, and my friend bob."))}
	reply := ask(conv)
	turn, err := dispatch.Anthropic(ctx, act, reply)
	if err != nil {
		t.Fatal(err)
	}
	conv = append(conv, reply.ToParam())
	final := ask(append(slices.Clone(conv), anthropic.NewUserMessage(turn.Messages...)))
	if last, err := dispatch.Anthropic(ctx, act, final); err != nil || len(last.Messages) != 0 {
		t.Errorf("a reply without tool_use gave %d blocks, %v; want none", len(last.Messages), err)
	}
	want := slices.Clone(wantStatuses)
	want[1] = "search refused"
	results := checkTurn(t, a, act, turn.Outcomes, "toolu_", want, readCalls[:1])
	resolved, err := turn.Resolve(results...)
	if err != nil {
		t.Fatal(err)
	}
	ask(append(slices.Clone(conv), anthropic.NewUserMessage(resolved...)))

	checkTools(t, a, provider.Anthropic, ep.request(t, 0)["tools"])
	var sent [3][]json.RawMessage
	for i := range sent {
		if err := json.Unmarshal(ep.request(t, i)["messages"], &sent[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent[1]) != 3 || len(sent[2]) != 3 {
		t.Fatalf("requests sent %d and %d messages; want the user's, the assistant's and one user message of tool results", len(sent[1]), len(sent[2]))
	}
	golden(t, "anthropic.golden", "== appended after the tool_use blocks, as the SDK sent them ==\n"+
		indent(t, sent[1][2])+"\n== once the effector is done: Resolve ==\n"+indent(t, sent[2][2])+"\n")

	for i, o := range turn.Outcomes {
		if o.Status != dispatch.Staged {
			continue
		}
		got, _ := json.Marshal(dispatch.AnthropicResult(o.Call.ID, resultFor(t, results, o.Intent.ID)))
		want, _ := json.Marshal(resolved[i])
		sameJSON(t, "AnthropicResult against Resolve for "+o.Call.ID, want, got)
	}
}

// Each provider's recording with a repeated call id is refused whole, through
// the SDK's own decoding.
func TestARepeatedCallIDFromEachSDKIsRefusedWhole(t *testing.T) {
	t.Parallel()
	chat := `{"id":"chatcmpl-1","object":"chat.completion","created":1764750001,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"refund_order","arguments":"{\"order_id\":\"ord_1\",\"amount\":5}"}},
		{"id":"call_1","type":"function","function":{"name":"lookup_customer","arguments":"{\"customer_id\":\"cus_ada\"}"}}]},"finish_reason":"tool_calls"}]}`
	resp := `{"id":"resp_1","object":"response","created_at":1764750001,"status":"completed","model":"gpt-4.1-mini","output":[
		{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"order_id\":\"ord_1\",\"amount\":5}","call_id":"call_1","name":"refund_order"},
		{"id":"fc_2","type":"function_call","status":"completed","arguments":"{\"customer_id\":\"cus_ada\"}","call_id":"call_1","name":"lookup_customer"}]}`
	msg := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"tool_use","content":[
		{"type":"tool_use","id":"toolu_1","name":"refund_order","input":{"order_id":"ord_1","amount":5}},
		{"type":"tool_use","id":"toolu_1","name":"lookup_customer","input":{"customer_id":"cus_ada"}}],"usage":{"input_tokens":1,"output_tokens":1}}`
	tests := []struct {
		name     string
		dispatch func(t *testing.T, act *runner.Activation) error
	}{
		{"chat completions", func(t *testing.T, act *runner.Activation) error {
			ep := newEndpoint(t, "/v1/chat/completions", []byte(chat))
			client := openai.NewClient(option.WithBaseURL(ep.srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
			c, err := client.Chat.Completions.New(
				context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = dispatch.OpenAIChat(context.Background(), act, c.Choices[0].Message)
			return err
		}},
		{"responses", func(t *testing.T, act *runner.Activation) error {
			ep := newEndpoint(t, "/v1/responses", []byte(resp))
			client := openai.NewClient(option.WithBaseURL(ep.srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
			r, err := client.Responses.New(
				context.Background(), responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = dispatch.OpenAIResponses(context.Background(), act, r)
			return err
		}},
		{"anthropic messages", func(t *testing.T, act *runner.Activation) error {
			ep := newEndpoint(t, "/v1/messages", []byte(msg))
			client := anthropic.NewClient(aoption.WithBaseURL(ep.srv.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
			m, err := client.Messages.New(
				context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = dispatch.Anthropic(context.Background(), act, m)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" refuses the response and stages nothing", func(t *testing.T) {
			t.Parallel()
			a := newAgent(t)
			act := a.activation()
			err := tt.dispatch(t, act)
			var re *dispatch.ResponseError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "share the id") {
				t.Fatalf("dispatch = %v; want a *dispatch.ResponseError about the shared id", err)
			}
			if act.Step() != 0 || len(a.calls()) != 0 {
				t.Errorf("a refused response staged (step %d) or ran %v", act.Step(), a.calls())
			}
		})
	}
}

func TestResolveRefusesAResultOfAnotherTurn(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	outs, err := dispatch.OpenAIChat(context.Background(), a.activation(), openai.ChatCompletionMessage{ToolCalls: []openai.ChatCompletionMessageToolCallUnion{
		{ID: "call_1", Type: "function", Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: "refund_order", Arguments: `{"order_id":"ord_1","amount":5}`}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	other := intent.IntentID([]byte("ticket-4711"), 2, 0)
	var ue *dispatch.UnknownResultError
	if _, err := outs.Resolve(&intent.Result{IntentID: other, Status: intent.StatusOK}); !errors.As(err, &ue) || ue.IntentID != other {
		t.Errorf("Resolve(a result of another activation) = %v; want *UnknownResultError naming %s", err, other)
	}
	// No results: the staged answers stand.
	msgs, err := outs.Resolve()
	if err != nil || len(msgs) != 1 {
		t.Fatal(err)
	}
	got, _ := json.Marshal(msgs[0])
	want, _ := json.Marshal(outs.Messages[0])
	sameJSON(t, "Resolve() against the staged answer", want, got)
}

func TestNilResponsesAndActivationsAreRefused(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	if _, err := dispatch.OpenAIResponses(context.Background(), a.activation(), nil); !errors.As(err, new(*dispatch.ResponseError)) {
		t.Errorf("OpenAIResponses(nil) = %v; want *ResponseError", err)
	}
	if _, err := dispatch.Anthropic(context.Background(), a.activation(), nil); !errors.As(err, new(*dispatch.ResponseError)) {
		t.Errorf("Anthropic(nil) = %v; want *ResponseError", err)
	}
	if _, err := dispatch.OpenAIChat(context.Background(), nil, openai.ChatCompletionMessage{}); err == nil || !strings.Contains(err.Error(), "nil *runner.Activation") {
		t.Errorf("OpenAIChat(nil activation) = %v; want an error naming the nil activation", err)
	}
}

func resultFor(t *testing.T, results []*intent.Result, id string) *intent.Result {
	t.Helper()
	for _, r := range results {
		if r.IntentID == id {
			return r
		}
	}
	t.Fatalf("no result for intent %s", id)
	return nil
}

func jsonArray(items []json.RawMessage) []byte {
	b, _ := json.Marshal(items)
	return b
}
