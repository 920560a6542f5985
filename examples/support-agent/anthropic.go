package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/runner"
)

// The Anthropic side of the example (-provider anthropic): the same service
// and script, the model reached through anthropic-sdk-go, the official
// Anthropic SDK, and its tool calls carried through the activation with
// dispatch.Anthropic. Offline, the script is served as Messages API
// responses by an endpoint the program starts in-process.

// anthropicProvider talks to a Messages API endpoint through
// anthropic-sdk-go: the local scripted endpoint, or a real model. Replies
// are kept as they came, so the replay of a real model's activation is
// served the same ones locally.
type anthropicProvider struct {
	client anthropic.Client
	model  string
	where  string
	tools  []anthropic.ToolUnionParam
	live   bool

	recorded [][]byte
}

func newAnthropicProvider(pipeline *registry.Registry, model, where string, live bool, opts ...option.RequestOption) (*anthropicProvider, error) {
	tools, err := dispatch.AnthropicTools(pipeline)
	if err != nil {
		return nil, err
	}
	opts = append([]option.RequestOption{option.WithMaxRetries(1)}, opts...)
	return &anthropicProvider{client: anthropic.NewClient(opts...), model: model, where: where, tools: tools, live: live}, nil
}

func (p *anthropicProvider) describe() string { return p.where }

func (p *anthropicProvider) open(conv *conversation) (chatModel, error) {
	return &anthropicChat{p: p, system: conv.System,
		msgs: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(conv.User))}}, nil
}

// replay serves the replies this provider gave from a local endpoint: the
// scripted endpoint already does; a real model's replies were recorded.
func (p *anthropicProvider) replay() (modelProvider, func(), error) {
	if !p.live {
		return p, func() {}, nil
	}
	ep := newMessagesEndpoint(p.recorded)
	r := &anthropicProvider{
		client: anthropic.NewClient(option.WithBaseURL(ep.baseURL()), option.WithAPIKey("replay"), option.WithMaxRetries(0)),
		model:  p.model, where: "the recorded replies, from a local endpoint", tools: p.tools,
	}
	return r, ep.close, nil
}

type anthropicChat struct {
	p      *anthropicProvider
	system string
	msgs   []anthropic.MessageParam
}

func (c *anthropicChat) ask(ctx context.Context, act *runner.Activation) (string, []dispatch.Outcome, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(c.p.model), MaxTokens: 1024, Messages: c.msgs, Tools: c.p.tools}
	if c.system != "" {
		params.System = []anthropic.TextBlockParam{{Text: c.system}}
	}
	resp, err := c.p.client.Messages.New(ctx, params)
	if err != nil {
		// The SDK's error text is the HTTP exchange; the API's message
		// says what to fix.
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) && apiErr.Message != "" {
			return "", nil, fmt.Errorf("model: %w: %s", err, apiErr.Message)
		}
		return "", nil, fmt.Errorf("model: %w", err)
	}
	if c.p.live {
		c.p.recorded = append(c.p.recorded, []byte(resp.RawJSON()))
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

// messagesEndpoint is a local Messages API endpoint, in process, that
// replays recorded replies: the scripted conversation's, or a real model's
// kept from the first run for the replay. The reply to a request is the one
// after as many as its conversation already holds (its assistant messages).
// Like the real API it refuses a conversation whose tool_use blocks are not
// answered by tool_result blocks in the next user message.
type messagesEndpoint struct {
	srv     *httptest.Server
	replies [][]byte

	mu       sync.Mutex
	requests [][]byte
}

func newMessagesEndpoint(replies [][]byte) *messagesEndpoint {
	e := &messagesEndpoint{replies: replies}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// baseURL is what anthropic-sdk-go's option.WithBaseURL takes.
func (e *messagesEndpoint) baseURL() string { return e.srv.URL }

func (e *messagesEndpoint) close() { e.srv.Close() }

// messagesRequest is the part of a Messages API request the endpoint checks.
type messagesRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
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

func (e *messagesEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		messagesError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("this endpoint serves POST /v1/messages only, not %s %s", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		messagesError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, body)
	e.mu.Unlock()
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		messagesError(w, http.StatusBadRequest, "invalid_request_error", "the request is not JSON: "+err.Error())
		return
	}
	if req.Stream {
		messagesError(w, http.StatusBadRequest, "invalid_request_error", "this endpoint does not stream")
		return
	}
	asked := 0
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		asked++
		answered := map[string]bool{}
		if i+1 < len(req.Messages) && req.Messages[i+1].Role == "user" {
			for _, b := range req.Messages[i+1].Content {
				if b.Type == "tool_result" {
					answered[b.ToolUseID] = true
				}
			}
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && !answered[b.ID] {
				messagesError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, b.ID))
				return
			}
		}
	}
	if asked >= len(e.replies) {
		messagesError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("the recording has %d replies and the conversation already holds them all", len(e.replies)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(e.replies[asked])
}

// request returns the i-th request the endpoint was sent.
func (e *messagesEndpoint) request(i int) (messagesRequest, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var req messagesRequest
	if i >= len(e.requests) {
		return req, fmt.Errorf("the endpoint was sent %d requests, not %d", len(e.requests), i+1)
	}
	err := json.Unmarshal(e.requests[i], &req)
	return req, err
}

func messagesError(w http.ResponseWriter, code int, kind, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// scriptedMessages renders the script's model replies as Messages API
// responses, as the API would send them: tool_use blocks with ids
// toolu_<reply>_<n> and their input, or the final text.
func scriptedMessages(conv *conversation, model string) ([][]byte, error) {
	out := make([][]byte, len(conv.Model))
	for i, r := range conv.Model {
		if (r.Text == "") == (len(r.Calls) == 0) {
			return nil, fmt.Errorf("script: model reply %d must hold either text or calls", i+1)
		}
		content := []map[string]any{}
		stop := "end_turn"
		if r.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": r.Text})
		}
		for j, c := range r.Calls {
			input := json.RawMessage("{}")
			if len(c.Args) > 0 {
				b, err := compact(c.Args)
				if err != nil {
					return nil, fmt.Errorf("script: model reply %d, call %d (%s): %w", i+1, j+1, c.Name, err)
				}
				input = b
			}
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", i+1, j+1), "name": c.Name, "input": input})
			stop = "tool_use"
		}
		b, err := json.Marshal(map[string]any{
			"id": fmt.Sprintf("msg_scripted_%d", i+1), "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 20},
		})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
