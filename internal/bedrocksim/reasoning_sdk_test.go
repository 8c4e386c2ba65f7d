package bedrocksim

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answerOf decodes a unary answer with the simulator's own wire structs.
func answerOf(t testing.TB, body []byte) converseResponse {
	t.Helper()
	var resp converseResponse
	assert.NoError(t, json.Unmarshal(body, &resp), "%s", body)
	return resp
}

func TestReasoningAnswers(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	ask := func(text string) string { return user(`{"text":"` + text + `"}`) }
	const callText = `The user asks "Use get_weather for Paris."; I will call get_weather.`
	type block struct{ text, signature, redacted string } // redacted: base64; text "-": a text block
	for _, tc := range []struct {
		name, model, body, first string
		want                     []block
	}{
		{"budget, a call", sonnet4, reqWith(join(weatherTC, fields(thinkOn), max4k), ask("Use get_weather for Paris.")), "Use get_weather for Paris.",
			[]block{{text: callText, signature: signThinking(sonnetID, tagOf("Use get_weather for Paris."), callText)}, {text: "-"}, {text: "tool"}}},
		{"budget, tool results", sonnet4, toolTurn(signed(sonnetID, "Hi", "I will call get_weather.")), "Hi",
			[]block{{text: "The tool results are in; I will answer from the tool results.", signature: signThinking(sonnetID, tagOf("Hi"), "The tool results are in; I will answer from the tool results.")}, {text: "-"}}},
		{"redact", sonnet4, reqWith(join(fields(thinkOn), max4k), ask("Please REDACT this.")), "Please REDACT this.",
			[]block{{text: `The user asks "Please REDACT this."; I will answer in text.`, signature: signThinking(sonnetID, tagOf("Please REDACT this."), `The user asks "Please REDACT this."; I will answer in text.`)},
				{redacted: b64(redactedData(sonnetID, tagOf("Please REDACT this."), `The user asks "Please REDACT this."; I will answer in text.`))}, {text: "-"}}},
		{"redacted is a word", sonnet4, reqWith(join(fields(thinkOn), max4k), ask("It was redacted.")), "It was redacted.",
			[]block{{text: `The user asks "It was redacted."; I will answer in text.`, signature: signThinking(sonnetID, tagOf("It was redacted."), `The user asks "It was redacted."; I will answer in text.`)}, {text: "-"}}},
		{"adaptive only: no text", opus47, reqWith(fields(adaptive), hi), "Hi",
			[]block{{text: "", signature: signThinking(opus47ID, tagOf("Hi"), "")}, {text: "-"}}},
		{"adaptive", opus46, reqWith(fields(adaptive, `"output_config":{"effort":"low"}`), hi), "Hi",
			[]block{{text: `The user asks "Hi"; I will answer in text.`, signature: signThinking(opus46ID, tagOf("Hi"), `The user asks "Hi"; I will answer in text.`)}, {text: "-"}}},
		{"Nova 2", nova2, reqWith(fields(`"reasoningConfig":{"type":"enabled","maxReasoningEffort":"low"}`), hi), "Hi",
			[]block{{text: "[REDACTED]"}, {text: "-"}}},
		{"gpt-oss", gptOSS, reqWith(fields(`"reasoning_effort":"medium"`), hi), "Hi",
			[]block{{text: `The user asks "Hi"; I will answer in text.`}, {text: "-"}}},
		{"DeepSeek", deepseek, reqWith(fields(`"reasoning_config":"high"`), hi), "Hi",
			[]block{{text: `The user asks "Hi"; I will answer in text.`}, {text: "-"}}},
		{"thinking off", sonnet4, reqWith(fields(`"thinking":{"type":"disabled"}`), hi), "Hi", []block{{text: "-"}}},
		{"Nova 2 reasoning off", nova2, reqWith(fields(`"reasoningConfig":{"type":"disabled"}`), hi), "Hi", []block{{text: "-"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := post(t, url, "/model/"+tc.model+"/converse", "Bearer k", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			a := answerOf(t, body)
			content := a.Output.Message.Content
			require.Len(t, content, len(tc.want), "%s", body)
			reasoningChars := 0
			for i, want := range tc.want {
				b := content[i]
				switch {
				case want.text == "-":
					assert.NotNil(t, b.Text, "block %d", i)
				case want.text == "tool":
					assert.NotNil(t, b.ToolUse, "block %d", i)
				case want.redacted != "":
					require.NotNil(t, b.ReasoningContent, "block %d", i)
					assert.Equal(t, want.redacted, b64(b.ReasoningContent.RedactedContent))
					reasoningChars += len(b.ReasoningContent.RedactedContent)
				default:
					require.NotNil(t, b.ReasoningContent, "block %d", i)
					require.NotNil(t, b.ReasoningContent.ReasoningText, "block %d", i)
					assert.Equal(t, want.text, b.ReasoningContent.ReasoningText.Text)
					assert.Equal(t, want.signature, b.ReasoningContent.ReasoningText.Signature)
					reasoningChars += len(want.text)
				}
			}
			// Output tokens count the reasoning.
			rest := 0
			for _, b := range content {
				if b.Text != nil {
					rest += len(*b.Text)
				}
				if b.ToolUse != nil {
					rest += len(b.ToolUse.Input)
				}
			}
			assert.Equal(t, tokens(reasoningChars+rest), a.Usage.OutputTokens)
			if strings.Contains(tc.body, `"type":"enabled"`) || strings.Contains(tc.body, adaptive) {
				assert.Contains(t, string(body), `"reasoningContent":{"reasoningText":{"text":`, "the text member is sent, empty too")
			}
		})
	}
}

// TestReasoningStream: reasoning blocks stream as deltas with no contentBlockStart, text in
// pieces then one signature, a redacted block in one delta, and the blocks after them move
// up an index. The SDK decodes every piece.
func TestReasoningStream(t *testing.T) {
	t.Parallel()
	client, url := startSim(t, New(Options{}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	body := reqWith(join(weatherTC, fields(thinkOn), max4k), user(`{"text":"Use get_weather, and redact."}`))
	_, unary := post(t, url, "/model/"+sonnet4+"/converse", "Bearer k", body)
	want := answerOf(t, unary).Output.Message.Content
	require.Len(t, want, 4)

	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId:                      aws.String(sonnet4),
		Messages:                     []types.Message{userText("Use get_weather, and redact.")},
		ToolConfig:                   toolConfig(tool("get_weather", `{"type":"object","properties":{"city":{"type":"string"}}}`)),
		InferenceConfig:              &types.InferenceConfiguration{MaxTokens: aws.Int32(4096)},
		AdditionalModelRequestFields: document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}),
	})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)
	assert.Equal(t, []string{"messageStart:assistant", "reasoning+", "signature", "stop", "redacted", "stop", "text+", "stop", "start", "input+", "stop", "messageStop", "metadata"}, compress(s.order))
	assert.Equal(t, []string{"reasoning@0+", "signature@0", "stop@0", "redacted@1", "stop@1", "text@2+", "stop@2", "start@3", "input@3+", "stop@3"}, compress(s.blocks))
	assert.Equal(t, want[0].ReasoningContent.ReasoningText.Text, s.reasoning)
	assert.Equal(t, want[0].ReasoningContent.ReasoningText.Signature, s.signature)
	assert.Equal(t, want[1].ReasoningContent.RedactedContent, s.redacted)
	assert.Equal(t, *want[2].Text, s.text)

	// Opus 4.7: the block has no text, only its signature.
	stream, err = client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId:                      aws.String(opus47),
		Messages:                     []types.Message{userText("Hi")},
		AdditionalModelRequestFields: document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "adaptive"}}),
	})
	require.NoError(t, err)
	s = collect(t, stream)
	require.NoError(t, s.err)
	assert.Equal(t, []string{"messageStart:assistant", "signature", "stop", "text+", "stop", "messageStop", "metadata"}, compress(s.order))
	assert.Equal(t, signThinking(opus47ID, tagOf("Hi"), ""), s.signature)
	assert.Empty(t, s.reasoning)
}

// TestReasoningDeterministic: with thinking, too, the same body gets the same bytes.
func TestReasoningDeterministic(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	body := reqWith(join(weatherTC, fields(thinkOn), max4k), user(`{"text":"use get_weather and redact"}`))
	for _, op := range []string{"converse", "converse-stream"} {
		_, first := post(t, url, "/model/"+sonnet4+"/"+op, "Bearer k", body)
		_, second := post(t, url, "/model/"+sonnet4+"/"+op, "Bearer k", body)
		assert.Equal(t, first, second, op)
		assert.Contains(t, string(first), "signature", op)
	}
}

// TestReasoningRoundTrip plays a client that sends the answer's reasoning back with its tool
// results, through the real SDK: unchanged it passes; a changed text or signature fails with
// G8, a block of another model with G9, and a dropped block with G7.
func TestReasoningRoundTrip(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	thinkingOn := document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}})
	first := userText("Use get_weather for Paris.")
	tools := toolConfig(tool("get_weather", weatherSchema))
	call := func(model string, msgs ...types.Message) (*bedrockruntime.ConverseOutput, error) {
		return client.Converse(t.Context(), &bedrockruntime.ConverseInput{
			ModelId: aws.String(model), Messages: msgs, ToolConfig: tools,
			InferenceConfig:              &types.InferenceConfiguration{MaxTokens: aws.Int32(4096)},
			AdditionalModelRequestFields: thinkingOn,
		})
	}
	firstTurn := func(model string) []types.ContentBlock {
		out, err := call(model, first)
		require.NoError(t, err)
		content := outputMessage(t, out).Content
		require.Len(t, content, 3)
		return content
	}
	content := firstTurn(sonnet4)
	rc, ok := content[0].(*types.ContentBlockMemberReasoningContent)
	require.True(t, ok, "first block is %T", content[0])
	text, ok := rc.Value.(*types.ReasoningContentBlockMemberReasoningText)
	require.True(t, ok, "reasoning is %T", rc.Value)
	assert.Equal(t, `The user asks "Use get_weather for Paris."; I will call get_weather.`, *text.Value.Text)
	use := content[2].(*types.ContentBlockMemberToolUse).Value
	results := types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
		&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: use.ToolUseId,
			Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "sunny"}}}}}}
	turn := func(blocks ...types.ContentBlock) []types.Message {
		return []types.Message{first, {Role: types.ConversationRoleAssistant, Content: blocks}, results}
	}
	reasoning := func(text, signature string) types.ContentBlock {
		return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
			Value: types.ReasoningTextBlock{Text: aws.String(text), Signature: aws.String(signature)}}}
	}

	out, err := call(sonnet4, turn(content...)...)
	require.NoError(t, err)
	answer := outputMessage(t, out).Content
	require.Len(t, answer, 2)
	assert.Equal(t, "The tool results are in; I will answer from the tool results.",
		*answer[0].(*types.ContentBlockMemberReasoningContent).Value.(*types.ReasoningContentBlockMemberReasoningText).Value.Text)
	assert.Equal(t, "Tool results received: get_weather → sunny", answer[1].(*types.ContentBlockMemberText).Value)

	sig := *text.Value.Signature
	otherModel := firstTurn("us.anthropic.claude-opus-4-5-20251101-v1:0")[0]
	for name, tc := range map[string]struct {
		blocks []types.ContentBlock
		want   string
	}{
		"changed text":      {[]types.ContentBlock{reasoning(*text.Value.Text+" ", sig), content[1], content[2]}, g8},
		"changed signature": {[]types.ContentBlock{reasoning(*text.Value.Text, strings.ToLower(sig[:8])+sig[8:]), content[1], content[2]}, g8},
		"another model":     {[]types.ContentBlock{otherModel, content[1], content[2]}, g9},
		"dropped":           {content[1:], strings.Replace(g7, "%s", "text", 1)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := call(sonnet4, turn(tc.blocks...)...)
			assert.Equal(t, "ValidationException", errorCode(t, err))
			assert.Equal(t, tc.want, errorMessageOf(t, err))
		})
	}
}

// TestReasoningStreamRoundTrip: a block put together from stream deltas goes back as valid.
func TestReasoningStreamRoundTrip(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	adaptiveOn := document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "adaptive"}})
	first := userText("Use get_weather for Paris.")
	tools := toolConfig(tool("get_weather", `{"type":"object","properties":{"city":{"type":"string"}}}`))
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(opus46), Messages: []types.Message{first}, ToolConfig: tools, AdditionalModelRequestFields: adaptiveOn})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)
	require.Len(t, s.tools, 1)
	out, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{
		ModelId: aws.String(opus46), ToolConfig: tools, AdditionalModelRequestFields: adaptiveOn,
		Messages: []types.Message{first,
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
				&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
					Value: types.ReasoningTextBlock{Text: aws.String(s.reasoning), Signature: aws.String(s.signature)}}},
				&types.ContentBlockMemberText{Value: s.text},
				toolUse(s.tools[0].id, s.tools[0].name, map[string]any{"city": "Paris"}),
			}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
				&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(s.tools[0].id),
					Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "sunny"}}}}}},
		}})
	require.NoError(t, err)
	assert.Equal(t, types.StopReasonEndTurn, out.StopReason)
}
