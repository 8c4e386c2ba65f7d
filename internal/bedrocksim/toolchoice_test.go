package bedrocksim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// additional is an additionalModelRequestFields member carrying tool_choice.
func additional(toolChoice string) string {
	return `"additionalModelRequestFields":{"tool_choice":` + toolChoice + `}`
}

func TestAnthropicToolChoiceValidation(t *testing.T) {
	t.Parallel()
	withTools := func(choice string, extra ...string) string {
		return reqWith(strings.Join(append([]string{weatherTC, additional(choice)}, extra...), ","), hi)
	}
	forced := func(converseChoice, choice string) string {
		return reqWith(`"toolConfig":{"tools":[`+weather+`,`+spec("get_time")+`],"toolChoice":`+converseChoice+`},`+additional(choice), hi)
	}
	for _, tc := range []struct {
		name, model, body, want string
	}{
		// Valid.
		{"auto, parallel off", sonnet4, withTools(`{"type":"auto","disable_parallel_tool_use":true}`), ""},
		{"auto, parallel on", sonnet4, withTools(`{"type":"auto","disable_parallel_tool_use":false}`), ""},
		{"any", sonnet45, withTools(`{"type":"any"}`), ""},
		{"tool", opus46, withTools(`{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}`), ""},
		{"null tool_choice", sonnet4, reqWith(additional(`null`), hi), ""},
		{"other fields pass", sonnet4, reqWith(`"additionalModelRequestFields":{"top_k":5}`, hi), ""},
		{"same as Converse any", sonnet4, forced(`{"any":{}}`, `{"type":"any","disable_parallel_tool_use":true}`), ""},
		{"same as Converse auto", sonnet4, forced(`{"auto":{}}`, `{"type":"auto","disable_parallel_tool_use":true}`), ""},
		{"same as Converse tool", sonnet4, forced(`{"tool":{"name":"get_time"}}`, `{"type":"tool","name":"get_time"}`), ""},
		{"unread off Claude", nova, reqWith(additional(`{"disable_parallel_tool_use":true}`), hi), ""},
		{"unread on Llama", llama, reqWith(additional(`"x"`), hi), ""},
		{"application profile is read", appARN, withTools(`{"type":"auto","disable_parallel_tool_use":true}`), ""},

		// Refused.
		{"no type", sonnet4, withTools(`{"disable_parallel_tool_use":true}`), "tool_choice.type: Field required"},
		{"null type", sonnet4, withTools(`{"type":null}`), "tool_choice.type: Field required"},
		{"no type, no tools", sonnet4, reqWith(additional(`{"disable_parallel_tool_use":true}`), hi), "tool_choice.type: Field required"},
		{"no type on an application profile", appARN, withTools(`{"disable_parallel_tool_use":true}`), "tool_choice.type: Field required"},
		{"unknown type", sonnet4, withTools(`{"type":"required"}`),
			"tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool'"},
		{"type not a string", sonnet4, withTools(`{"type":1}`),
			"tool_choice: Input tag '1' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool'"},
		{"not an object", sonnet4, withTools(`"auto"`), "tool_choice: Input should be a valid dictionary or object to extract fields from"},
		{"tool without name", sonnet4, withTools(`{"type":"tool","disable_parallel_tool_use":true}`), "tool_choice.tool.name: Field required"},
		{"name not a string", sonnet4, withTools(`{"type":"tool","name":5}`), "tool_choice.tool.name: Input should be a valid string"},
		{"name with auto", sonnet4, withTools(`{"type":"auto","name":"get_weather"}`), "tool_choice.auto.name: Extra inputs are not permitted"},
		{"name with any", sonnet4, withTools(`{"type":"any","name":"get_weather"}`), "tool_choice.any.name: Extra inputs are not permitted"},
		{"unknown key", sonnet4, withTools(`{"type":"auto","parallel":false}`), "tool_choice.auto.parallel: Extra inputs are not permitted"},
		{"flag not a boolean", sonnet4, withTools(`{"type":"auto","disable_parallel_tool_use":"true"}`), "tool_choice.auto.disable_parallel_tool_use: Input should be a valid boolean"},
		{"without toolConfig", sonnet4, reqWith(additional(`{"type":"auto","disable_parallel_tool_use":true}`), hi), "tool_choice may only be specified while providing tools."},
		{"unknown tool", sonnet4, withTools(`{"type":"tool","name":"get_time"}`), "The tool get_time named in additionalModelRequestFields.tool_choice.name is not defined in toolConfig.tools."},
		{"auto against Converse any", sonnet4, forced(`{"any":{}}`, `{"type":"auto","disable_parallel_tool_use":true}`),
			"The tool_choice in additionalModelRequestFields (auto) conflicts with toolConfig.toolChoice (any). Remove one of them or make them the same, and try again."},
		{"any against Converse auto", sonnet4, forced(`{"auto":{}}`, `{"type":"any"}`),
			"The tool_choice in additionalModelRequestFields (any) conflicts with toolConfig.toolChoice (auto). Remove one of them or make them the same, and try again."},
		{"other tool than Converse's", sonnet4, forced(`{"tool":{"name":"get_time"}}`, `{"type":"tool","name":"get_weather"}`),
			"The tool_choice in additionalModelRequestFields (tool get_weather) conflicts with toolConfig.toolChoice (tool get_time). Remove one of them or make them the same, and try again."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateJSON(tc.model, []byte(tc.body))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var apiErr *apiError
			require.True(t, errors.As(err, &apiErr), "%v", err)
			assert.Equal(t, codeValidation, apiErr.Code)
			assert.Equal(t, http.StatusBadRequest, apiErr.Status)
			assert.Equal(t, tc.want, apiErr.Message)
		})
	}
}

// turnFunc sends one turn of a conversation and returns the assistant's message and stop reason.
type turnFunc func(t *testing.T, msgs []types.Message, tc *types.ToolConfiguration, extra document.Interface) (types.Message, types.StopReason)

func unaryTurn(client *bedrockruntime.Client) turnFunc {
	return func(t *testing.T, msgs []types.Message, tc *types.ToolConfiguration, extra document.Interface) (types.Message, types.StopReason) {
		out := converse(t, client, &bedrockruntime.ConverseInput{Messages: msgs, ToolConfig: tc, AdditionalModelRequestFields: extra})
		return outputMessage(t, out), out.StopReason
	}
}

func streamTurn(client *bedrockruntime.Client) turnFunc {
	return func(t *testing.T, msgs []types.Message, tc *types.ToolConfiguration, extra document.Interface) (types.Message, types.StopReason) {
		out, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
			ModelId: aws.String(claude), Messages: msgs, ToolConfig: tc, AdditionalModelRequestFields: extra})
		require.NoError(t, err)
		s := collect(t, out)
		require.NoError(t, s.err)
		msg := types.Message{Role: types.ConversationRoleAssistant}
		if s.text != "" {
			msg.Content = append(msg.Content, &types.ContentBlockMemberText{Value: s.text})
		}
		for _, st := range s.tools {
			input := map[string]any{}
			if joined := strings.Join(st.fragments, ""); joined != "" {
				require.NoError(t, json.Unmarshal([]byte(joined), &input))
			}
			msg.Content = append(msg.Content, toolUse(st.id, st.name, input))
		}
		return msg, s.stopReason
	}
}

// noParallel is additionalModelRequestFields switching parallel tool calls off.
func noParallel(disable bool) document.Interface {
	return document.NewLazyDocument(map[string]any{"tool_choice": map[string]any{"type": "auto", "disable_parallel_tool_use": disable}})
}

// loop runs a tool loop as a client would: each call the answer makes gets a result (an error
// for the calls whose number, counted from 1, is in fail), until the answer is text. It
// returns the names called per turn and the final text.
func loop(t *testing.T, turn turnFunc, task string, tc *types.ToolConfiguration, extra document.Interface, fail map[int]bool) (calls [][]string, text string) {
	t.Helper()
	msgs := []types.Message{userText(task)}
	n := 0
	for range 10 {
		msg, stop := turn(t, msgs, tc, extra)
		msgs = append(msgs, msg)
		var names []string
		var results []types.ContentBlock
		for _, b := range msg.Content {
			use, ok := b.(*types.ContentBlockMemberToolUse)
			if !ok {
				continue
			}
			n++
			names = append(names, *use.Value.Name)
			r := types.ToolResultBlock{ToolUseId: use.Value.ToolUseId, Content: []types.ToolResultContentBlock{
				&types.ToolResultContentBlockMemberText{Value: fmt.Sprintf("result %d of %s", n, *use.Value.Name)}}}
			if fail[n] {
				r.Status = types.ToolResultStatusError
			}
			results = append(results, &types.ContentBlockMemberToolResult{Value: r})
		}
		if len(names) == 0 {
			assert.Equal(t, types.StopReasonEndTurn, stop)
			require.Len(t, msg.Content, 1)
			return calls, msg.Content[0].(*types.ContentBlockMemberText).Value
		}
		assert.Equal(t, types.StopReasonToolUse, stop)
		calls = append(calls, names)
		msgs = append(msgs, types.Message{Role: types.ConversationRoleUser, Content: results})
	}
	t.Fatal("the conversation did not end")
	return nil, ""
}

func TestOneToolAtATime(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	tc := toolConfig(tool("get_weather", weatherSchema), tool("get_time", timeSchema), tool("ping", noArgsSchema))
	const task = "Use ping, then get_weather and get_time; ping again."
	for name, turn := range map[string]turnFunc{"converse": unaryTurn(client), "stream": streamTurn(client)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			// One call per answer, in the order the task names them, then the text of a
			// parallel loop with the same results.
			calls, text := loop(t, turn, task, tc, noParallel(true), nil)
			assert.Equal(t, [][]string{{"ping"}, {"get_weather"}, {"get_time"}}, calls)
			assert.Equal(t, "Tool results received: ping → result 1 of ping; get_weather → result 2 of get_weather; get_time → result 3 of get_time", text)

			// disable_parallel_tool_use false: today's parallel calls, in the tools list's order.
			calls, text = loop(t, turn, task, tc, noParallel(false), nil)
			assert.Equal(t, [][]string{{"get_weather", "get_time", "ping"}}, calls)
			assert.Equal(t, "Tool results received: get_weather → result 1 of get_weather; get_time → result 2 of get_time; ping → result 3 of ping", text)

			// A failed tool is called once more, alone, right after its error.
			calls, text = loop(t, turn, task, tc, noParallel(true), map[int]bool{2: true})
			assert.Equal(t, [][]string{{"ping"}, {"get_weather"}, {"get_weather"}, {"get_time"}}, calls)
			assert.Equal(t, "Tool results received: ping → result 1 of ping; get_weather → result 2 of get_weather (error); "+
				"get_weather → result 3 of get_weather; get_time → result 4 of get_time", text)

			// Once only: a retry that fails too is quoted, not retried.
			calls, text = loop(t, turn, task, tc, noParallel(true), map[int]bool{1: true, 2: true})
			assert.Equal(t, [][]string{{"ping"}, {"ping"}, {"get_weather"}, {"get_time"}}, calls)
			assert.Equal(t, "Tool results received: ping → result 1 of ping (error); ping → result 2 of ping (error); "+
				"get_weather → result 3 of get_weather; get_time → result 4 of get_time", text)

			// No tool named: a plain answer, as without the flag.
			calls, text = loop(t, turn, "Hi there", tc, noParallel(true), nil)
			assert.Empty(t, calls)
			assert.Equal(t, "Hello from the Bedrock simulator. You said: Hi there", text)
		})
	}
}

func TestOneToolAtATimeForced(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	tc := toolConfig(tool("get_weather", weatherSchema), tool("get_time", timeSchema))
	// A tool forced by the Anthropic tool_choice alone is called, once, then the result quoted.
	extra := document.NewLazyDocument(map[string]any{"tool_choice": map[string]any{"type": "tool", "name": "get_time", "disable_parallel_tool_use": true}})
	calls, text := loop(t, unaryTurn(client), "Use get_weather.", tc, extra, nil)
	assert.Equal(t, [][]string{{"get_time"}}, calls)
	assert.Equal(t, "Tool results received: get_time → result 1 of get_time", text)
}

func TestAnthropicToolChoiceThroughSDK(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{
		ModelId:                      aws.String(claude),
		Messages:                     []types.Message{userText("Use get_weather.")},
		ToolConfig:                   toolConfig(tool("get_weather", weatherSchema)),
		AdditionalModelRequestFields: document.NewLazyDocument(map[string]any{"tool_choice": map[string]any{"disable_parallel_tool_use": true}}),
	})
	require.Error(t, err)
	assert.Equal(t, "ValidationException", errorCode(t, err))
	assert.Equal(t, "tool_choice.type: Field required", errorMessageOf(t, err))

	_, err = client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId:                      aws.String(claude),
		Messages:                     []types.Message{userText("Hi")},
		AdditionalModelRequestFields: noParallel(true),
	})
	require.Error(t, err)
	assert.Equal(t, "ValidationException", errorCode(t, err))
	assert.Equal(t, "tool_choice may only be specified while providing tools.", errorMessageOf(t, err))
}
