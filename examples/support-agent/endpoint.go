package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
)

// chatEndpoint is a local OpenAI-compatible Chat Completions endpoint, in
// process, that replays recorded replies: the scripted conversation's, or a
// real model's kept from the first run for the replay. The reply to a request
// is the one after as many as its conversation already holds (its assistant
// messages), so a replayed activation gets the same replies in the same order.
// Like the real API it refuses a conversation that leaves a tool call
// unanswered or answers a call that was not made.
type chatEndpoint struct {
	srv     *httptest.Server
	replies [][]byte
}

func newChatEndpoint(replies [][]byte) *chatEndpoint {
	e := &chatEndpoint{replies: replies}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// baseURL is what openai-go's option.WithBaseURL takes.
func (e *chatEndpoint) baseURL() string { return e.srv.URL + "/v1/" }

func (e *chatEndpoint) close() { e.srv.Close() }

// chatRequest is the part of a Chat Completions request the endpoint checks.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func (e *chatEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		apiError(w, http.StatusNotFound, fmt.Sprintf("this endpoint serves POST /v1/chat/completions only, not %s %s", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "the request is not JSON: "+err.Error())
		return
	}
	if req.Stream {
		apiError(w, http.StatusBadRequest, "this endpoint does not stream")
		return
	}
	// As the real API does: each assistant message's tool calls are answered,
	// each by one tool message, before the conversation goes on.
	var open []string // calls awaiting their tool message
	asked := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			i := slices.Index(open, m.ToolCallID)
			if i < 0 {
				apiError(w, http.StatusBadRequest, fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q).", m.ToolCallID))
				return
			}
			open = slices.Delete(open, i, i+1)
			continue
		}
		if len(open) > 0 {
			apiError(w, http.StatusBadRequest, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(open, ", "))
			return
		}
		if m.Role == "assistant" {
			asked++
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		}
	}
	if len(open) > 0 {
		apiError(w, http.StatusBadRequest, "The following tool_call_ids did not have response messages: "+strings.Join(open, ", "))
		return
	}
	if asked >= len(e.replies) {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("the recording has %d replies and the conversation already holds them all", len(e.replies)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(e.replies[asked])
}

func apiError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// scriptedReplies renders the script's model replies as Chat Completions
// responses, as the API would send them: tool calls with ids call_<reply>_<n>
// and their arguments as JSON text, or the final text.
func scriptedReplies(conv *conversation, model string) ([][]byte, error) {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type message struct {
		Role        string     `json:"role"`
		Content     *string    `json:"content"`
		ToolCalls   []toolCall `json:"tool_calls,omitempty"`
		Refusal     *string    `json:"refusal"`
		Annotations []any      `json:"annotations"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		Logprobs     any     `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
	}
	type completion struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	out := make([][]byte, len(conv.Model))
	for i, r := range conv.Model {
		if (r.Text == "") == (len(r.Calls) == 0) {
			return nil, fmt.Errorf("script: model reply %d must hold either text or calls", i+1)
		}
		m := message{Role: "assistant", Annotations: []any{}}
		finish := "stop"
		if r.Text != "" {
			m.Content = &r.Text
		} else {
			finish = "tool_calls"
		}
		for j, c := range r.Calls {
			args := []byte("{}")
			if len(c.Args) > 0 {
				var err error
				if args, err = compact(c.Args); err != nil {
					return nil, fmt.Errorf("script: model reply %d, call %d (%s): %w", i+1, j+1, c.Name, err)
				}
			}
			m.ToolCalls = append(m.ToolCalls, toolCall{ID: fmt.Sprintf("call_%d_%d", i+1, j+1), Type: "function", Function: function{Name: c.Name, Arguments: string(args)}})
		}
		b, err := json.Marshal(completion{
			ID: fmt.Sprintf("chatcmpl-scripted-%d", i+1), Object: "chat.completion", Created: 1764750000 + int64(i),
			Model: model, Choices: []choice{{Message: m, FinishReason: finish}},
		})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func compact(raw json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	err := json.Compact(&b, raw)
	return b.Bytes(), err
}
