package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/beam-agents/toolreg/intent"
)

// The Anthropic run's whole trace: the scripted conversation served as
// Messages API responses and read through anthropic-sdk-go, the same every
// run but for the state directory.
func TestMainJobTraceThroughAnthropic(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	checkTrace(t, "trace_anthropic.golden", "-provider", "anthropic")
}

// The same script staged through either SDK gives the same intents, byte
// for byte but for the tool call id each carries, the provider's own
// (toolu_..., call_...); through anthropic-sdk-go the refused call goes back
// to the model as a tool_result flagged is_error.
func TestTheAnthropicLoopStagesWhatTheOpenAIOneDoes(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	var conv conversation
	if err := json.Unmarshal(defaultScript, &conv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out bytes.Buffer
	svc, err := start(ctx, manifestsDir, t.TempDir(), "", &out)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.close()
	replies, err := scriptedMessages(&conv, "scripted")
	if err != nil {
		t.Fatal(err)
	}
	ep := newMessagesEndpoint(replies)
	defer ep.close()
	claude, err := newAnthropicProvider(svc.bound.Pipeline, "scripted", "scripted", false, option.WithBaseURL(ep.baseURL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	gpt, closeGPT, err := openModels(svc, &conv, "openai", "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer closeGPT()
	at := time.UnixMilli(1764750000000)
	viaClaude, err := svc.activate(ctx, &conv, claude, at, false)
	if err != nil {
		t.Fatal(err)
	}
	viaGPT, err := svc.activate(ctx, &conv, gpt, at, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(viaClaude.wire) != 4 || len(viaGPT.wire) != 4 {
		t.Fatalf("staged %d intents through anthropic-sdk-go and %d through openai-go; want 4 each", len(viaClaude.wire), len(viaGPT.wire))
	}
	for i := range viaClaude.wire {
		var c, g intent.Intent
		if err := c.UnmarshalBinary(viaClaude.wire[i]); err != nil {
			t.Fatal(err)
		}
		if err := g.UnmarshalBinary(viaGPT.wire[i]); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.ToolCallID, "toolu_") || !strings.HasPrefix(g.ToolCallID, "call_") {
			t.Errorf("intent %d carries tool call ids %q and %q; want Claude's toolu_ and GPT's call_", i, c.ToolCallID, g.ToolCallID)
		}
		c.ToolCallID, g.ToolCallID = "", ""
		cb, _ := c.MarshalBinary()
		gb, _ := g.MarshalBinary()
		if !bytes.Equal(cb, gb) {
			t.Errorf("intent %d differs between the two SDKs' loops", i)
		}
	}
	// The second request's last message answers the first reply's calls:
	// the lookup's result plain, the refused search's flagged is_error.
	req, err := ep.request(1)
	if err != nil {
		t.Fatal(err)
	}
	last := req.Messages[len(req.Messages)-1]
	flags := map[string]bool{}
	for _, b := range last.Content {
		if b.Type == "tool_result" && b.IsError != nil {
			flags[b.ToolUseID] = *b.IsError
		}
	}
	if len(flags) != 2 || flags["toolu_1_1"] || !flags["toolu_1_2"] {
		t.Errorf("the tool results sent after the first reply have is_error %v; want toolu_1_1 false, toolu_1_2 true", flags)
	}
}

// With ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL set the service talks to
// that server, with the key and the -model name, and the replay does not ask
// the model again: it is served the replies the model gave.
func TestMainJobTalksToTheClaudeModelAKeyNames(t *testing.T) {
	var conv conversation
	if err := json.Unmarshal(defaultScript, &conv); err != nil {
		t.Fatal(err)
	}
	replies, err := scriptedMessages(&conv, "claude-test-1")
	if err != nil {
		t.Fatal(err)
	}
	script := newMessagesEndpoint(replies)
	defer script.close()
	var asked atomic.Int64
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		// The key, as this SDK sends it (the API takes either header).
		got := r.Header.Get("X-Api-Key")
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			got = bearer
		}
		if got != "sk-ant-live-test" {
			messagesError(w, http.StatusUnauthorized, "authentication_error", "bad key "+got)
			return
		}
		var req messagesRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || req.Model != "claude-test-1" {
			messagesError(w, http.StatusBadRequest, "invalid_request_error", "the request asks for model "+req.Model)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		script.serve(w, r)
	}))
	defer live.Close()
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-live-test")
	t.Setenv("ANTHROPIC_BASE_URL", live.URL)

	out, errOut, code := runMain(t, "-provider", "anthropic", "-manifests", manifestsDir, "-state", t.TempDir(), "-model", "claude-test-1")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"model: claude-test-1 at " + live.URL + ", through anthropic-sdk-go (ANTHROPIC_API_KEY is set)",
		`- "limit": expected integer, got "ten"`,
		"the replay staged 4 intents, byte-identical to the first run's",
		`"tool_use_id":"toolu_3_1","is_error":false`,
		"payment provider applied 2 refund(s); mail relay sent 1 email(s) in this process",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the trace lacks %q:\n%s", want, out)
		}
	}
	if n := asked.Load(); n != int64(len(replies)) {
		t.Errorf("the model was asked %d times; want %d, once per reply of the first activation: the replay must not ask it again", n, len(replies))
	}

	// A key the server refuses: the API's message, and nothing staged.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
	out, errOut, code = runMain(t, "-provider", "anthropic", "-manifests", manifestsDir, "-state", t.TempDir(), "-model", "claude-test-1")
	if code != 1 || !strings.Contains(errOut, "401 Unauthorized") || !strings.Contains(errOut, "bad key sk-ant-wrong") || strings.Contains(out, "executed now") {
		t.Errorf("a refused key: exit %d, stderr %q", code, errOut)
	}
	// -offline keeps to the scripted endpoint even with a key.
	before := asked.Load()
	out, errOut, code = runMain(t, "-provider", "anthropic", "-manifests", manifestsDir, "-state", t.TempDir(), "-offline")
	if code != 0 || !strings.Contains(out, "served as Messages API responses by a local in-process endpoint") || asked.Load() != before {
		t.Errorf("-offline: exit %d, the model asked %d more times: %s\n%s", code, asked.Load()-before, errOut, out)
	}
	if _, errOut, code := runMain(t, "-provider", "gemini", "-manifests", manifestsDir, "-state", t.TempDir()); code != 2 || !strings.Contains(errOut, `-provider "gemini": want openai or anthropic`) {
		t.Errorf("-provider gemini: exit %d, stderr %q", code, errOut)
	}
}

// The local Messages endpoint refuses what the real API refuses: a tool_use
// the next message does not answer, and more replies than it recorded.
func TestTheLocalMessagesEndpointRefusesWhatTheAPIWould(t *testing.T) {
	t.Parallel()
	var conv conversation
	if err := json.Unmarshal(defaultScript, &conv); err != nil {
		t.Fatal(err)
	}
	replies, err := scriptedMessages(&conv, "scripted")
	if err != nil {
		t.Fatal(err)
	}
	ep := newMessagesEndpoint(replies)
	t.Cleanup(ep.close)
	client := anthropic.NewClient(option.WithBaseURL(ep.baseURL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
	user := anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))
	call := anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1_1", map[string]any{}, "lookup_customer"))
	ask := func(msgs ...anthropic.MessageParam) error {
		_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "scripted", MaxTokens: 16, Messages: msgs})
		return err
	}
	var apiErr *anthropic.Error
	if err := ask(user, call, user); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1_1") {
		t.Errorf("a tool_use left unanswered: %v", err)
	}
	msgs := []anthropic.MessageParam{user}
	for range len(replies) {
		msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock("...")), user)
	}
	if err := ask(msgs...); !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "the recording has 4 replies") {
		t.Errorf("a fifth reply: %v; want the recording exhausted", err)
	}
}
