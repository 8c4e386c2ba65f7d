//go:build clients

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openai-go's Responses client against the gateway's Responses surface (docs/PROTOCOL.md
// 16), with the simulator behind it: its round trips, its stream events read into the
// SDK's accumulator, and a tool loop whose items go back as the SDK's ToParam gives them.

// sdkResponsesWeatherTool is a strict function tool as openai-go's caller writes it.
func sdkResponsesWeatherTool(name string) responses.ToolUnionParam {
	return responses.ToolParamOfFunction(name, map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"city": map[string]any{"type": "string"}},
		"required":             []string{"city"},
		"additionalProperties": false,
	}, true)
}

func TestResponsesClientUnary(t *testing.T) {
	t.Parallel()
	client, sim, _ := openAIGateway(t)
	resp, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
		Model:        testModel,
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
		Instructions: openai.String("Be brief."),
	})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(resp.ID, "resp_"), resp.ID)
	assert.Equal(t, responses.ResponseStatusCompleted, resp.Status)
	assert.Equal(t, testModel, resp.Model)
	assert.NotEmpty(t, resp.OutputText())
	assert.Positive(t, resp.Usage.TotalTokens)
	assert.Equal(t, resp.Usage.InputTokens+resp.Usage.OutputTokens, resp.Usage.TotalTokens)
	assert.Equal(t, "Be brief.", resp.Instructions.OfString)
	require.Len(t, sim.converseRequests(t), 1)
}

// responsesTurn is one turn of the SDK, unary or streamed; a stream's events, numbered
// 0, 1, 2, …, are read into the SDK's accumulator, whose reconstruction must be the
// response of response.completed.
func responsesTurn(t *testing.T, client openai.Client, streamed bool, params responses.ResponseNewParams) *responses.Response {
	t.Helper()
	if !streamed {
		resp, err := client.Responses.New(t.Context(), params)
		require.NoError(t, err)
		return resp
	}
	stream := client.Responses.NewStreaming(t.Context(), params)
	var acc responses.ResponseAccumulator
	var final *responses.Response
	var seq int64
	for stream.Next() {
		ev := stream.Current()
		require.Equal(t, seq, ev.SequenceNumber, ev.Type)
		seq++
		var server responses.ResponsesServerEventUnion
		require.NoError(t, json.Unmarshal([]byte(ev.RawJSON()), &server), ev.RawJSON())
		require.NoError(t, acc.AddEvent(server), ev.Type)
		if ev.Type == "response.completed" {
			completed := ev.AsResponseCompleted().Response
			final = &completed
		}
	}
	require.NoError(t, stream.Err())
	require.NotNil(t, final, "the stream completed")
	snap := acc.Snapshot()
	assert.Equal(t, "response.completed", snap.TerminalEvent)
	assert.Equal(t, final.ID, snap.ResponseID)
	rebuilt, err := acc.ReconstructedResponse()
	require.NoError(t, err)
	require.Len(t, rebuilt.Output, len(final.Output))
	for i, out := range snap.Output {
		item := final.Output[out.OutputIndex]
		assert.Equal(t, item.ID, out.ItemID, i)
		assert.Equal(t, item.Type, out.Type, i)
		switch item.Type {
		case "function_call":
			assert.Equal(t, item.Arguments.OfString, out.Arguments, "the deltas make the arguments")
		case "message":
			assert.Equal(t, item.AsMessage().Content[0].Text, out.Text[0], "the deltas make the text")
		}
	}
	return final
}

// TestResponsesClientToolLoop: the SDK's tool loop, unary and streamed: a call, its output
// paired by call_id, the answer from it; reasoning summaries on the way.
func TestResponsesClientToolLoop(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[streamed], func(t *testing.T) {
			t.Parallel()
			client, sim, _ := openAIGateway(t)
			input := responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("Call get_weather for Oslo.", responses.EasyInputMessageRoleUser),
			}
			params := func() responses.ResponseNewParams {
				return responses.ResponseNewParams{
					Model:     testModel,
					Input:     responses.ResponseNewParamsInputUnion{OfInputItemList: input},
					Tools:     []responses.ToolUnionParam{sdkResponsesWeatherTool("get_weather"), sdkResponsesWeatherTool("get_forecast")},
					Store:     openai.Bool(false),
					Reasoning: openai.ReasoningParam{Effort: openai.ReasoningEffortLow, Summary: openai.ReasoningSummaryAuto},
				}
			}
			resp := responsesTurn(t, client, streamed, params())
			var call responses.ResponseFunctionToolCall
			for _, item := range resp.Output {
				switch item.Type {
				case "reasoning":
					r := item.AsReasoning()
					require.Len(t, r.Summary, 1)
					assert.NotEmpty(t, r.Summary[0].Text)
					p := r.ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfReasoning: &p})
				case "message":
					p := item.AsMessage().ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
				case "function_call":
					call = item.AsFunctionCall()
					p := call.ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
				}
			}
			require.Equal(t, "get_weather", call.Name)
			var args map[string]any
			require.NoError(t, json.Unmarshal([]byte(call.Arguments), &args))
			assert.Contains(t, args, "city")
			out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c": 4, "sky": "overcast"}`)
			out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			input = append(input, out)

			resp = responsesTurn(t, client, streamed, params())
			assert.Contains(t, resp.OutputText(), "overcast")
			for _, item := range resp.Output {
				assert.NotEqual(t, "function_call", item.Type)
			}

			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 2)
			history := reqs[1]["messages"].([]any)
			require.Len(t, history, 3)
			assert.Equal(t, call.CallID, blockOf(t, history[1], "toolUse")["toolUseId"])
			assert.Equal(t, call.CallID, blockOf(t, history[2], "toolResult")["toolUseId"])
		})
	}
}
