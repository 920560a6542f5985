package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

// The Anthropic variant of the loop: the same service and script, the model
// reached through anthropic-sdk-go, its Messages API replies served by an
// in-process endpoint.

// messagesEndpoint replays the script as Messages API responses. Like the
// real API it refuses a conversation whose tool_use blocks are not answered
// by tool_result blocks in the next user message.
type messagesEndpoint struct {
	srv     *httptest.Server
	replies [][]byte

	mu       sync.Mutex
	requests [][]byte
}

type messagesRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
			IsError   *bool  `json:"is_error"`
		} `json:"content"`
	} `json:"messages"`
}

func newMessagesEndpoint(t *testing.T, conv *conversation) *messagesEndpoint {
	t.Helper()
	e := &messagesEndpoint{}
	for i, r := range conv.Model {
		var content []map[string]any
		stop := "end_turn"
		if r.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": r.Text})
		}
		for j, c := range r.Calls {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", i+1, j+1), "name": c.Name, "input": c.Args})
			stop = "tool_use"
		}
		b, err := json.Marshal(map[string]any{
			"id": fmt.Sprintf("msg_scripted_%d", i+1), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 20},
		})
		if err != nil {
			t.Fatal(err)
		}
		e.replies = append(e.replies, b)
	}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *messagesEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
		w.Write(b)
	}
	body, err := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || err != nil {
		fail("no route " + r.URL.Path)
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, body)
	e.mu.Unlock()
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fail(err.Error())
		return
	}
	asked := 0
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		asked++
		var open []string
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				open = append(open, b.ID)
			}
		}
		if len(open) == 0 {
			continue
		}
		answered := map[string]bool{}
		if i+1 < len(req.Messages) && req.Messages[i+1].Role == "user" {
			for _, b := range req.Messages[i+1].Content {
				if b.Type == "tool_result" {
					answered[b.ToolUseID] = true
				}
			}
		}
		for _, id := range open {
			if !answered[id] && i+1 < len(req.Messages) {
				fail(fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id))
				return
			}
		}
	}
	if asked >= len(e.replies) {
		fail("the recording has no more replies")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(e.replies[asked])
}

func (e *messagesEndpoint) request(t *testing.T, i int) messagesRequest {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var req messagesRequest
	if err := json.Unmarshal(e.requests[i], &req); err != nil {
		t.Fatal(err)
	}
	return req
}

type anthropicProvider struct {
	client anthropic.Client
	tools  []anthropic.ToolUnionParam
}

func (p *anthropicProvider) describe() string {
	return "the scripted conversation, served as Messages API responses by a local in-process endpoint, through anthropic-sdk-go"
}

func (p *anthropicProvider) open(conv *conversation) (chatModel, error) {
	return &anthropicChat{p: p, system: conv.System,
		msgs: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(conv.User))}}, nil
}

// replay: the endpoint serves the script again.
func (p *anthropicProvider) replay() (modelProvider, func(), error) { return p, func() {}, nil }

type anthropicChat struct {
	p      *anthropicProvider
	system string
	msgs   []anthropic.MessageParam
}

func (c *anthropicChat) ask(ctx context.Context, act *runner.Activation) (string, []dispatch.Outcome, error) {
	resp, err := c.p.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 1024, System: []anthropic.TextBlockParam{{Text: c.system}},
		Messages: c.msgs, Tools: c.p.tools,
	})
	if err != nil {
		return "", nil, err
	}
	turn, err := dispatch.Anthropic(ctx, act, resp)
	if err != nil {
		return "", nil, err
	}
	c.msgs = append(c.msgs, resp.ToParam())
	if len(turn.Messages) > 0 {
		c.msgs = append(c.msgs, anthropic.NewUserMessage(turn.Messages...))
	}
	var text strings.Builder
	for _, b := range resp.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	return text.String(), turn.Outcomes, nil
}

func (c *anthropicChat) answer(callID string, r *intent.Result) ([]byte, error) {
	return json.Marshal(dispatch.AnthropicResult(callID, r))
}

func TestTheAnthropicVariantOfTheLoop(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
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
	ep := newMessagesEndpoint(t, &conv)
	tools, err := dispatch.AnthropicTools(svc.bound.Pipeline)
	if err != nil {
		t.Fatal(err)
	}
	claude := &anthropicProvider{
		client: anthropic.NewClient(option.WithBaseURL(ep.srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0)),
		tools:  tools,
	}

	// The same script staged through either SDK gives the same intents, byte
	// for byte, but for the tool call id each carries: the provider's own
	// (toolu_..., call_...).
	at := time.UnixMilli(1764750000000)
	viaClaude, err := svc.activate(ctx, &conv, claude, at, false)
	if err != nil {
		t.Fatal(err)
	}
	gpt, closeGPT, err := openModels(svc, &conv, "unused", true)
	if err != nil {
		t.Fatal(err)
	}
	defer closeGPT()
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

	// The whole loop: refusals, staging, the effector, the replay.
	out.Reset()
	if err := svc.play(ctx, &conv, claude); err != nil {
		t.Fatal(err)
	}
	trace := out.String()
	for _, want := range []string{
		"through anthropic-sdk-go",
		`- "limit": expected integer, got "ten"`,
		`tool "refund_order" has side effects and never runs inline`,
		"the replay staged 4 intents, byte-identical to the first run's",
		"payment provider applied 2 refund(s); mail relay sent 1 email(s) in this process",
		`"tool_use_id":"toolu_3_1","is_error":false`,
		`"tool_use_id":"toolu_3_2","is_error":false`,
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("the trace lacks %q:\n%s", want, trace)
		}
	}
	// The refused search went back as a tool_result flagged is_error, the
	// lookup's as a plain one: the second request's last message.
	req := ep.request(t, 1)
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
