package dispatch

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/runner"
)

// Anthropic dispatches the tool_use blocks of a Messages API response through
// act and returns one tool_result block per call, in call order, with
// is_error set for a refused or failed call. Append msg.ToParam() to the
// conversation, then anthropic.NewUserMessage(turn.Messages...): the API
// takes a response's tool results together in the next user message. Blocks
// that are not tool_use (text, thinking, server tools) are left alone; a
// response with none gives an empty Turn.
func Anthropic(ctx context.Context, act *runner.Activation, msg *anthropic.Message) (*Turn[anthropic.ContentBlockParamUnion], error) {
	if msg == nil {
		return nil, &ResponseError{From: "dispatch.Anthropic", Problem: "the message is nil"}
	}
	var calls []Call
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			tu := b.AsToolUse()
			calls = append(calls, Call{ID: tu.ID, Name: tu.Name, Args: tu.Input})
		}
	}
	outs, err := dispatch(ctx, "dispatch.Anthropic", act, calls)
	if err != nil {
		return nil, err
	}
	return newTurn(outs, anthropic.NewToolResultBlock), nil
}

// AnthropicResult renders an intent's result (see ResultText) as the
// tool_result block answering toolUseID, the call that staged the intent,
// with is_error set unless the result is OK.
func AnthropicResult(toolUseID string, r *intent.Result) anthropic.ContentBlockParamUnion {
	text, isErr := ResultText(r)
	return anthropic.NewToolResultBlock(toolUseID, text, isErr)
}
