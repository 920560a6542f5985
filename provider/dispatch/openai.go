package dispatch

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/runner"
)

// OpenAIChat dispatches the tool calls of a Chat Completions assistant
// message (a choice's Message) through act and returns one "tool" message per
// call, in call order. Append msg.ToParam() to the conversation, then the
// turn's Messages. A message with no tool calls gives an empty Turn.
func OpenAIChat(ctx context.Context, act *runner.Activation, msg openai.ChatCompletionMessage) (*Turn[openai.ChatCompletionMessageParamUnion], error) {
	calls := make([]Call, len(msg.ToolCalls))
	for i, tc := range msg.ToolCalls {
		switch tc.Type {
		case "function", "":
			calls[i] = Call{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)}
		default:
			calls[i] = Call{ID: tc.ID, Name: tc.Custom.Name, Args: json.RawMessage(tc.Custom.Input), Type: tc.Type}
		}
	}
	outs, err := dispatch(ctx, "dispatch.OpenAIChat", act, calls)
	if err != nil {
		return nil, err
	}
	return newTurn(outs, openAIChatMessage), nil
}

// OpenAIChatResult renders an intent's result (see ResultText) as the "tool"
// message answering callID, the call that staged the intent. Chat Completions
// has no error flag: the text says what failed.
func OpenAIChatResult(callID string, r *intent.Result) openai.ChatCompletionMessageParamUnion {
	text, isErr := ResultText(r)
	return openAIChatMessage(callID, text, isErr)
}

func openAIChatMessage(callID, text string, _ bool) openai.ChatCompletionMessageParamUnion {
	return openai.ToolMessage(text, callID)
}

// OpenAIResponses dispatches the function_call output items of a Responses
// API response through act and returns one function_call_output input item
// per call, in call order. Unless the next request chains with
// previous_response_id, send the response's output items back first (each
// item's ToParam()), then the turn's Messages. Output items that are not tool
// calls (messages, reasoning) are left alone; a response with no
// function_call items gives an empty Turn.
func OpenAIResponses(ctx context.Context, act *runner.Activation, resp *responses.Response) (*Turn[responses.ResponseInputItemUnionParam], error) {
	if resp == nil {
		return nil, &ResponseError{From: "dispatch.OpenAIResponses", Problem: "the response is nil"}
	}
	var calls []Call
	for _, item := range resp.Output {
		switch item.Type {
		case "function_call":
			fc := item.AsFunctionCall()
			calls = append(calls, Call{ID: fc.CallID, Name: fc.Name, Args: json.RawMessage(fc.Arguments)})
		case "custom_tool_call":
			cc := item.AsCustomToolCall()
			calls = append(calls, Call{ID: cc.CallID, Name: cc.Name, Args: json.RawMessage(cc.Input), Type: "custom"})
		}
	}
	outs, err := dispatch(ctx, "dispatch.OpenAIResponses", act, calls)
	if err != nil {
		return nil, err
	}
	return newTurn(outs, openAIResponsesItem), nil
}

// OpenAIResponsesResult renders an intent's result (see ResultText) as the
// function_call_output item answering callID, the call that staged the
// intent. The Responses API has no error flag: the text says what failed.
func OpenAIResponsesResult(callID string, r *intent.Result) responses.ResponseInputItemUnionParam {
	text, isErr := ResultText(r)
	return openAIResponsesItem(callID, text, isErr)
}

func openAIResponsesItem(callID, text string, _ bool) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(text)
	item.OfFunctionCallOutput.CallID = param.NewOpt(callID)
	return item
}
