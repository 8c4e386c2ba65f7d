package responses

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/respstore"
	"github.com/nirmata/llm-gateway/internal/seal"
	"github.com/nirmata/llm-gateway/internal/store"
)

const (
	sonnet = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	opus   = "us.anthropic.claude-opus-4-1-20250805-v1:0"
)

var blocks = []chat.ReasoningBlock{{Text: "think", Signature: "c2ln"}, {Redacted: true, Data: "cmVk"}}

// testState is the state of key-a's calls on a gateway of one sealing key and a memory
// store; models resolve to themselves.
func testState(t *testing.T) *state {
	t.Helper()
	s, err := seal.New([]byte(strings.Repeat("k", seal.KeyBytes)))
	require.NoError(t, err)
	rs := respstore.New(respstore.Options{TTL: time.Hour, MaxBytes: 1 << 20, KeyMaxBytes: 1 << 20,
		Counters: store.NewMemory(nil), Backend: respstore.NewMemory(1<<20, nil)})
	return &state{ctx: context.Background(), keyID: "key-a", store: rs, sealer: s, foundation: capabilities.Foundation}
}

// TestDecodeSealedReasoning: an item's encrypted_content puts its blocks, byte for byte,
// on the assistant turn after it; one of another foundation model is left out and the
// item listed as ignored, as Bedrock refuses blocks moved between models.
func TestDecodeSealedReasoning(t *testing.T) {
	t.Parallel()
	st := testState(t)
	value := st.seal(sonnet, blocks)
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","store":false,"input":[{"role":"user","content":"go"},
			{"type":"reasoning","summary":[],"content":null,"encrypted_content":"` + value + `"},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"ok"}]}`)
	}
	c, err := decodeRequest(body(sonnet), st)
	require.NoError(t, err)
	require.Len(t, c.req.Messages, 3)
	assert.Equal(t, blocks, c.req.Messages[1].Reasoning)
	assert.Empty(t, c.req.Ignored)

	c, err = decodeRequest(body(opus), st)
	require.NoError(t, err)
	assert.Nil(t, c.req.Messages[1].Reasoning, "another model's blocks are left out")
	assert.Equal(t, []string{"input[1]"}, c.req.Ignored)
}

// TestDecodePreviousResponse: previous_response_id puts the stored conversation before
// the input, its reasoning opened; refusals of the input name its own items, those of the
// stored conversation previous_response_id; the response is stored with the whole
// conversation.
func TestDecodePreviousResponse(t *testing.T) {
	t.Parallel()
	st := testState(t)
	out := storedOutput([]any{
		&reasoningItem{Type: typeReasoning, ID: "rs_1_0", Summary: []summaryText{}, sealed: st.seal(sonnet, blocks)},
		&functionCallItem{Type: typeFunctionCall, ID: "fc_1_1", Status: statusCompleted, Arguments: `{"a":1}`, CallID: "c1", Name: "f"},
	})
	assert.Contains(t, string(out), `"encrypted_content":"`, "sealed whatever include asked")
	rec := &respstore.Record{Owner: "key-a", Response: jsontext.Value(`{}`), Output: out,
		Input: jsontext.Value(`[{"type":"message","role":"user","content":"go"}]`)}
	require.Empty(t, st.store.Save(st.ctx, "resp_1", rec))

	c, err := decodeRequest([]byte(`{"model":"`+sonnet+`","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c1","output":"ok"}]}`), st)
	require.NoError(t, err)
	require.Len(t, c.req.Messages, 3)
	assert.Equal(t, "go", c.req.Messages[0].Content)
	assert.Equal(t, blocks, c.req.Messages[1].Reasoning)
	assert.Equal(t, []chat.ToolCall{{ID: "c1", Type: typeFunction, Name: "f", Arguments: `{"a":1}`}}, c.req.Messages[1].ToolCalls)
	assert.Equal(t, "c1", c.req.Messages[2].ToolCallID)
	assert.Equal(t, "previous_response_id", c.paths.rewrite("messages[1].tool_calls[0].function.arguments"))
	assert.Equal(t, "previous_response_id", c.paths.rewrite("messages[0].content"))
	assert.Equal(t, "input[0].output", c.paths.rewrite("messages[2].content"))
	var items []map[string]any
	require.NoError(t, json.Unmarshal(c.conversation, &items))
	require.Len(t, items, 4, "the stored input and output, then the request's")
	assert.Equal(t, "function_call_output", items[3]["type"])

	other := *st
	other.keyID = "key-b"
	_, err = decodeRequest([]byte(`{"previous_response_id":"resp_1","input":"x"}`), &other)
	f := fault.Classify(t.Context(), err)
	assert.Equal(t, fault.KindNotFound, f.Kind)
	assert.Equal(t, "previous_response_id", f.Param)
	assert.Equal(t, `previous_response_id "resp_1": no response of that id is stored for this API key: it is unknown, expired (responses_ttl), deleted, or was created with another key`, f.Message)
}

// TestInputItemsPage: input_items' limit, order and after, and ids for the items the
// client sent without one.
func TestInputItemsPage(t *testing.T) {
	t.Parallel()
	items := jsontext.Value(`[{"type":"message","role":"user","content":"a"},{"id":"fc_9","type":"function_call"},{}]`)
	p, err := pageOf("", "", "")
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list","data":[{"id":"item_r_2"},{"id":"fc_9","type":"function_call"},
		{"id":"item_r_0","type":"message","role":"user","content":"a"}],"first_id":"item_r_2","last_id":"item_r_0","has_more":false}`,
		string(p.list(items, "resp_r")))
	p, err = pageOf("1", "asc", "item_r_0")
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list","data":[{"id":"fc_9","type":"function_call"}],"first_id":"fc_9","last_id":"fc_9","has_more":true}`,
		string(p.list(items, "resp_r")))
	p, err = pageOf("5", "asc", "nowhere")
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`, string(p.list(items, "resp_r")))
	for _, bad := range [][2]string{{"0", ""}, {"101", ""}, {"x", ""}, {"", "up"}} {
		_, err := pageOf(bad[0], bad[1], "")
		f := fault.Classify(t.Context(), err)
		assert.Equal(t, fault.KindInvalid, f.Kind, bad)
	}
}

// TestAnswerSealsReasoning: with include reasoning.encrypted_content, the reasoning item of
// a unary answer and of a stream (output_item.done, response.completed) carries the blocks
// sealed for the caller, which open to them; without it, none does.
func TestAnswerSealsReasoning(t *testing.T) {
	t.Parallel()
	st := testState(t)
	for _, include := range []bool{false, true} {
		body := `{"model":"` + sonnet + `","input":"go","store":false}`
		if include {
			body = `{"model":"` + sonnet + `","input":"go","store":false,"include":["reasoning.encrypted_content"]}`
		}
		c, err := decodeRequest([]byte(body), st)
		require.NoError(t, err)
		r := c.answer(&testHead, &chat.Response{Model: sonnet, Reasoning: blocks, Text: "hi", Finish: chat.FinishStop})
		sealed := r.Output[0].(*reasoningItem).EncryptedContent

		s := c.streamer(testHead, sonnet)
		var out []byte
		for _, ev := range []chat.Event{{Kind: chat.EventReasoningBlock, Block: blocks[0]}, {Kind: chat.EventReasoningBlock, Block: blocks[1]},
			{Kind: chat.EventContent, Text: "hi"}, {Kind: chat.EventDone, Finish: chat.FinishStop}} {
			out = s.appendEvent(out, &ev)
		}
		streamed := s.resp.Output[0].(*reasoningItem).EncryptedContent
		if !include {
			assert.Empty(t, sealed)
			assert.Empty(t, streamed)
			assert.NotContains(t, string(out), "encrypted_content")
			continue
		}
		for _, v := range []string{sealed, streamed} {
			model, got, err := st.sealer.Open("key-a", v)
			require.NoError(t, err)
			assert.Equal(t, capabilities.Foundation(sonnet), model)
			assert.Equal(t, blocks, got)
		}
		assert.Equal(t, 2, strings.Count(string(out), `"encrypted_content":"`+streamed+`"`), "output_item.done and response.completed")
	}
}
