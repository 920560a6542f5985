package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var manifestsDir = filepath.Join("..", "..", "manifests")

func runMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// The default run's whole trace: the scripted conversation through
// openai-go, the same every run but for the state directory.
func TestMainJobTrace(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	checkTrace(t, "trace.golden")
}

// checkTrace runs the service with args on a new state directory and
// compares its trace with testdata/golden (rewritten with -update).
func checkTrace(t *testing.T, golden string, args ...string) {
	t.Helper()
	state := t.TempDir()
	out, errOut, code := runMain(t, append([]string{"-manifests", manifestsDir, "-state", state}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := strings.ReplaceAll(out, state, "$STATE")
	// An approval request carries the activation's time (its event's, now).
	got = regexp.MustCompile(`(_at_ms\\?":)[0-9]+`).ReplaceAllString(got, "${1}$$MS")
	path := filepath.Join("testdata", golden)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
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

// With OPENAI_API_KEY and OPENAI_BASE_URL set the service talks to that
// server, with the key and the -model name, and the replay does not ask the
// model again: it is served the replies the model gave.
func TestMainJobTalksToTheModelAKeyNames(t *testing.T) {
	var conv conversation
	if err := json.Unmarshal(defaultScript, &conv); err != nil {
		t.Fatal(err)
	}
	replies, err := scriptedReplies(&conv, "my-model-2026")
	if err != nil {
		t.Fatal(err)
	}
	script := newChatEndpoint(replies)
	defer script.close()
	var asked atomic.Int64
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if got := r.Header.Get("Authorization"); got != "Bearer sk-live-test" {
			apiError(w, http.StatusUnauthorized, "bad key "+got)
			return
		}
		var req chatRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || req.Model != "my-model-2026" {
			apiError(w, http.StatusBadRequest, "the request asks for model "+req.Model)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		script.serve(w, r)
	}))
	defer live.Close()
	t.Setenv("OPENAI_API_KEY", "sk-live-test")
	t.Setenv("OPENAI_BASE_URL", live.URL+"/v1/")

	out, errOut, code := runMain(t, "-manifests", manifestsDir, "-state", t.TempDir(), "-model", "my-model-2026")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"model: my-model-2026 at " + live.URL + "/v1/, through openai-go (OPENAI_API_KEY is set)",
		`- "limit": expected integer, got "ten"`,
		`tool "refund_order" has side effects and never runs inline`,
		"the replay staged 4 intents, byte-identical to the first run's",
		"payment provider applied 2 refund(s); mail relay sent 1 email(s) in this process",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the trace lacks %q:\n%s", want, out)
		}
	}
	if n := asked.Load(); n != int64(len(replies)) {
		t.Errorf("the model was asked %d times; want %d, once per reply of the first activation: the replay must not ask it again", n, len(replies))
	}

	// -offline keeps to the scripted endpoint even with a key.
	before := asked.Load()
	out, errOut, code = runMain(t, "-manifests", manifestsDir, "-state", t.TempDir(), "-offline")
	if code != 0 || !strings.Contains(out, "local in-process endpoint") || asked.Load() != before {
		t.Errorf("-offline: exit %d, the model asked %d more times: %s\n%s", code, asked.Load()-before, errOut, out)
	}
}

// The local endpoint refuses what the real API refuses, so the service's
// conversation is checked as the real API would check it.
func TestTheLocalEndpointRefusesAConversationTheAPIWouldRefuse(t *testing.T) {
	t.Parallel()
	var conv conversation
	if err := json.Unmarshal(defaultScript, &conv); err != nil {
		t.Fatal(err)
	}
	replies, err := scriptedReplies(&conv, "scripted")
	if err != nil {
		t.Fatal(err)
	}
	ep := newChatEndpoint(replies)
	t.Cleanup(ep.close)
	client := openai.NewClient(option.WithBaseURL(ep.baseURL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
	call := openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: "call_1_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "lookup_customer", Arguments: `{}`}}}},
	}}
	user := openai.UserMessage("hi")
	tests := []struct {
		name string
		msgs []openai.ChatCompletionMessageParamUnion
		want string
	}{
		{"a tool call left unanswered", []openai.ChatCompletionMessageParamUnion{user, call, user}, "did not have response messages: call_1_1"},
		{"a tool call left unanswered at the end", []openai.ChatCompletionMessageParamUnion{user, call}, "did not have response messages: call_1_1"},
		{"an answer to a call never made", []openai.ChatCompletionMessageParamUnion{user, openai.ToolMessage("x", "call_9")}, `must be a response to a preceding message with 'tool_calls' (tool_call_id "call_9")`},
		{"a call answered twice", []openai.ChatCompletionMessageParamUnion{user, call, openai.ToolMessage("x", "call_1_1"), openai.ToolMessage("y", "call_1_1")}, `(tool_call_id "call_1_1")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "scripted", Messages: tt.msgs})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, tt.want) {
				t.Errorf("got %v; want a 400 saying %q", err, tt.want)
			}
		})
	}
	// Four replies, then the recording is exhausted.
	msgs := []openai.ChatCompletionMessageParamUnion{user}
	for range len(replies) {
		msgs = append(msgs, openai.AssistantMessage("..."))
	}
	_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "scripted", Messages: msgs})
	if apiErr := (*openai.Error)(nil); !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "the recording has 4 replies") {
		t.Errorf("a fifth reply: %v; want the recording exhausted", err)
	}
}

func TestABadScriptIsRefused(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	calls := `{"calls":[{"name":"search_kb","args":{"query":"refund"}}]}`
	tests := []struct {
		name, script, want string
	}{
		{"a reply with neither text nor calls", `{"entity_key":"t","seq":1,"user":"hi","model":[{}]}`, "script: model reply 1 must hold either text or calls"},
		{"a reply with both", `{"entity_key":"t","seq":1,"user":"hi","model":[{"text":"x","calls":[{"name":"search_kb","args":{}}]}]}`, "script: model reply 1 must hold either text or calls"},
		{"a model that never stops calling tools", `{"entity_key":"t","seq":1,"user":"hi","model":[` + strings.Repeat(calls+",", 12) + calls + `]}`,
			"the model still calls tools after 12 replies: the activation fails"},
		{"a model whose script ends before it answers", `{"entity_key":"t","seq":1,"user":"hi","model":[` + calls + `]}`, "the recording has 1 replies and the conversation already holds them all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "script.json")
			if err := os.WriteFile(file, []byte(tt.script), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runMain(t, "-manifests", manifestsDir, "-state", t.TempDir(), "-script", file)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tt.want)
			}
			if regexp.MustCompile(`executed now`).MatchString(out) {
				t.Errorf("a failed activation's intents were executed:\n%s", out)
			}
		})
	}
}
