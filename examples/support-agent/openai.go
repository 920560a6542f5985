package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/runner"
)

// chatModel is one activation's conversation with a model, through its
// provider's SDK.
type chatModel interface {
	// ask sends the conversation so far, dispatches the reply's tool calls
	// through act, and adds the reply and the calls' answers to the
	// conversation. It returns the reply's text and the calls' outcomes; no
	// outcomes means the model has answered.
	ask(ctx context.Context, act *runner.Activation) (text string, outs []dispatch.Outcome, err error)
	// answer renders an intent's result as the provider's message answering
	// callID in a later turn, as JSON.
	answer(callID string, r *intent.Result) ([]byte, error)
}

// modelProvider opens a conversation per activation. replay returns the
// provider a replayed activation talks to: one that gives the same replies.
type modelProvider interface {
	describe() string
	open(conv *conversation) (chatModel, error)
	replay() (modelProvider, func(), error)
}

// openAIProvider talks to a Chat Completions endpoint through openai-go: the
// local scripted endpoint, or a real model. Replies are kept as they came, so
// the replay of a real model's activation is served the same ones locally.
type openAIProvider struct {
	client openai.Client
	model  string
	where  string
	tools  []openai.ChatCompletionToolUnionParam
	live   bool

	recorded [][]byte
}

func newOpenAIProvider(pipeline *registry.Registry, model, where string, live bool, opts ...option.RequestOption) (*openAIProvider, error) {
	tools, err := dispatch.OpenAIChatTools(pipeline, false)
	if err != nil {
		return nil, err
	}
	opts = append([]option.RequestOption{option.WithMaxRetries(1)}, opts...)
	return &openAIProvider{client: openai.NewClient(opts...), model: model, where: where, tools: tools, live: live}, nil
}

func (p *openAIProvider) describe() string { return p.where }

func (p *openAIProvider) open(conv *conversation) (chatModel, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	if conv.System != "" {
		msgs = append(msgs, openai.SystemMessage(conv.System))
	}
	msgs = append(msgs, openai.UserMessage(conv.User))
	return &openAIChat{p: p, msgs: msgs}, nil
}

// replay serves the replies this provider gave from a local endpoint: the
// scripted endpoint already does; a real model's replies were recorded.
func (p *openAIProvider) replay() (modelProvider, func(), error) {
	if !p.live {
		return p, func() {}, nil
	}
	ep := newChatEndpoint(p.recorded)
	r := &openAIProvider{
		client: openai.NewClient(option.WithBaseURL(ep.baseURL()), option.WithAPIKey("replay"), option.WithMaxRetries(0)),
		model:  p.model, where: "the recorded replies, from a local endpoint", tools: p.tools,
	}
	return r, ep.close, nil
}

type openAIChat struct {
	p    *openAIProvider
	msgs []openai.ChatCompletionMessageParamUnion
}

func (c *openAIChat) ask(ctx context.Context, act *runner.Activation) (string, []dispatch.Outcome, error) {
	resp, err := c.p.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: c.p.model, Messages: c.msgs, Tools: c.p.tools,
	})
	if err != nil {
		// openai-go's error text is the HTTP status only; the API's message
		// says what to fix.
		var apiErr *openai.Error
		if errors.As(err, &apiErr) && apiErr.Message != "" {
			return "", nil, fmt.Errorf("model: %w: %s", err, apiErr.Message)
		}
		return "", nil, fmt.Errorf("model: %w", err)
	}
	if len(resp.Choices) == 0 {
		return "", nil, errors.New("model: the reply has no choices")
	}
	if c.p.live {
		c.p.recorded = append(c.p.recorded, []byte(resp.RawJSON()))
	}
	msg := resp.Choices[0].Message
	turn, err := dispatch.OpenAIChat(ctx, act, msg)
	if err != nil {
		return "", nil, err
	}
	c.msgs = append(c.msgs, msg.ToParam())
	c.msgs = append(c.msgs, turn.Messages...)
	return msg.Content, turn.Outcomes, nil
}

func (c *openAIChat) answer(callID string, r *intent.Result) ([]byte, error) {
	return json.Marshal(dispatch.OpenAIChatResult(callID, r))
}
