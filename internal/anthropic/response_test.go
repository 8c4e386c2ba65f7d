package anthropic

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

var testAnswer = answer{id: "msg_abc", model: "claude-sonnet-4-5"}

func TestAppendMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stops []string
		resp  chat.Response
		want  string
	}{
		{"thinking, redacted thinking, text and a tool call; input tokens without the cached ones", nil, chat.Response{
			Reasoning: []chat.ReasoningBlock{{Text: "Hmm.\n", Signature: "EqQB+/="}, {Redacted: true, Data: "EmwK"}},
			Text:      "Listing.",
			ToolCalls: []chat.ToolCall{{ID: "toolu_1", Name: "Bash", Arguments: `{"command":"ls"}`}},
			Finish:    chat.FinishToolCalls, StopReason: "tool_use",
			Usage: chat.Usage{PromptTokens: 1500, CompletionTokens: 40, CacheReadTokens: 1000, CacheWriteTokens: 300}},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
				`{"type":"thinking","thinking":"Hmm.\n","signature":"EqQB+/="},{"type":"redacted_thinking","data":"EmwK"},` +
				`{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":200,"cache_creation_input_tokens":300,"cache_read_input_tokens":1000,"output_tokens":40}}`},
		{"no text: no content", nil, chat.Response{Finish: chat.FinishLength, StopReason: "model_context_window_exceeded"},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":"max_tokens","stop_sequence":null,` +
				`"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"the one stop sequence met", []string{"END"}, chat.Response{Text: "a", Finish: chat.FinishStop, StopReason: "stop_sequence"},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":"END",` +
				`"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"one of several: which is not known", []string{"END", "STOP"}, chat.Response{Text: "a", Finish: chat.FinishStop, StopReason: "stop_sequence"},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":null,` +
				`"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"a guardrail: refusal", nil, chat.Response{Text: "blocked", Finish: chat.FinishContentFilter, StopReason: "guardrail_intervened"},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"blocked"}],"stop_reason":"refusal","stop_sequence":null,` +
				`"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"a structured answer: the finish wins over Bedrock's tool_use", nil, chat.Response{Text: `{"a":1}`, Finish: chat.FinishStop, StopReason: "tool_use"},
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"{\"a\":1}"}],"stop_reason":"end_turn","stop_sequence":null,` +
				`"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := testAnswer
			a.stops = tt.stops
			assert.Equal(t, tt.want, string(a.appendMessage(nil, &tt.resp)))
		})
	}
}

// sse writes events as a stream has them.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		name, data, _ := strings.Cut(e, " ")
		b.WriteString("event: " + name + "\ndata: " + data + "\n\n")
	}
	return b.String()
}

const startEvent = `message_start {"type":"message_start","message":{"id":"msg_abc","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],` +
	`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`

// TestStreamer: every event kind, as Claude Code reads them: blocks numbered as they
// open, thinking deltas then the signature, redacted thinking whole at its start, text,
// tool input as JSON fragments, then the stop reason with the usage.
func TestStreamer(t *testing.T) {
	t.Parallel()
	events := []chat.Event{
		{Kind: chat.EventReasoning, Text: "Let me "},
		{Kind: chat.EventReasoning, Text: "see."},
		{Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Text: "Let me see.", Signature: "EqQB"}},
		{Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Redacted: true, Data: "EmwK"}},
		{Kind: chat.EventContent, Text: "Running "},
		{Kind: chat.EventContent, Text: ""},
		{Kind: chat.EventContent, Text: "it."},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{ID: "toolu_1", Name: "Bash"}},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `{"command":`}},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `"ls"}`}},
		{Kind: chat.EventToolCallEnd, Index: 0},
		{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{ID: "toolu_2", Name: "Read"}},
		{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: `{}`}},
		{Kind: chat.EventToolCallEnd, Index: 1},
		{Kind: chat.EventDone, Finish: chat.FinishToolCalls, Usage: chat.Usage{PromptTokens: 120, CompletionTokens: 30, CacheWriteTokens: 100}},
	}
	want := sse(startEvent,
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"see."}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`,
		`content_block_stop {"type":"content_block_stop","index":0}`,
		`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwK"}}`,
		`content_block_stop {"type":"content_block_stop","index":1}`,
		`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Running "}}`,
		`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"it."}}`,
		`content_block_stop {"type":"content_block_stop","index":2}`,
		`content_block_start {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`,
		`content_block_delta {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"command\":"}}`,
		`content_block_delta {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"\"ls\"}"}}`,
		`content_block_stop {"type":"content_block_stop","index":3}`,
		`content_block_start {"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_2","name":"Read","input":{}}}`,
		`content_block_delta {"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
		`content_block_stop {"type":"content_block_stop","index":4}`,
		`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":20,"cache_creation_input_tokens":100,"cache_read_input_tokens":0,"output_tokens":30}}`,
		`message_stop {"type":"message_stop"}`)
	s := &streamer{answer: testAnswer}
	var got []byte
	for i := range events {
		got = s.appendEvent(got, &events[i])
	}
	assert.Equal(t, want, string(got))
}

// TestStreamerEdges: a thinking block whose text came whole (no deltas before it), a
// text block closed by the end, and the stop sequence of a request with one.
func TestStreamerEdges(t *testing.T) {
	t.Parallel()
	s := &streamer{answer: answer{id: "msg_abc", model: "claude-sonnet-4-5", stops: []string{"END"}}}
	var got []byte
	for _, ev := range []chat.Event{
		{Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Text: "whole", Signature: "sig"}},
		{Kind: chat.EventContent, Text: "a"},
		{Kind: chat.EventDone, Finish: chat.FinishStop, StopReason: "stop_sequence"},
	} {
		got = s.appendEvent(got, &ev)
	}
	assert.Equal(t, sse(startEvent,
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"whole"}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		`content_block_stop {"type":"content_block_stop","index":0}`,
		`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"}}`,
		`content_block_stop {"type":"content_block_stop","index":1}`,
		`message_delta {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`,
		`message_stop {"type":"message_stop"}`), string(got))
}

func TestErrorEventAndPing(t *testing.T) {
	t.Parallel()
	f := fault.Failure{Kind: fault.KindUnavailable, Message: "the upstream is unavailable"}
	assert.Equal(t, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"the upstream is unavailable\"},\"request_id\":\"r1\"}\n\n",
		string(appendErrorEvent(nil, errorOf(f, "r1"))))
	assert.Equal(t, "event: ping\ndata: {\"type\": \"ping\"}\n\n", string(appendPing(nil)))
}

// TestErrorTable: every Kind has a status and an Anthropic error type, and those the
// contract names have its status (docs/PROTOCOL.md 15.5).
func TestErrorTable(t *testing.T) {
	t.Parallel()
	for k := range fault.Kinds {
		e := errorTypes[k]
		assert.NotZero(t, e.status, "kind %d has no status", k)
		assert.Contains(t, []string{"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large",
			"rate_limit_error", "api_error", "overloaded_error"}, e.typ, "kind %d", k)
	}
	for kind, want := range map[fault.Kind]struct {
		status int
		typ    string
	}{
		fault.KindInvalid:         {400, "invalid_request_error"},
		fault.KindUnauthenticated: {401, "authentication_error"},
		fault.KindNotFound:        {404, "not_found_error"},
		fault.KindTooLarge:        {413, "request_too_large"},
		fault.KindRateLimited:     {429, "rate_limit_error"},
		fault.KindInternal:        {500, "api_error"},
		fault.KindUpstream:        {502, "api_error"},
		fault.KindTimeout:         {504, "api_error"},
		fault.KindUnavailable:     {529, "overloaded_error"},
	} {
		assert.Equal(t, want.status, errorTypes[kind].status, kind.Code())
		assert.Equal(t, want.typ, errorTypes[kind].typ, kind.Code())
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	WriteError(w, "r1", fault.Failure{Kind: fault.KindRateLimited, Message: "slow down", RetryAfter: 3 * time.Second})
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "3", w.Header().Get("Retry-After"))
	assert.Equal(t, "r1", w.Header().Get("Request-Id"))
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"r1"}`, w.Body.String())

	w = httptest.NewRecorder()
	WriteError(w, "r2", fault.Failure{Kind: fault.KindUnauthenticated, Message: "missing or invalid API key: send Authorization: NIRMATA-API <key> or Bearer <key>"})
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.JSONEq(t, `{"type":"error","error":{"type":"authentication_error","message":"missing or invalid API key: send x-api-key: <key> or Authorization: Bearer <key>"},"request_id":"r2"}`, w.Body.String())

	w = httptest.NewRecorder()
	WriteError(w, "r3", fault.Failure{Kind: fault.KindTooLarge, Message: "request body too large"})
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.Equal(t, "false", w.Header().Get("X-Should-Retry"))
	assert.Empty(t, w.Header().Get("Retry-After"))
}

func TestBetas(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"interleaved-thinking-2025-05-14", "context-management-2025-06-27", "fine-grained-tool-streaming-2025-05-14"},
		betas([]string{"interleaved-thinking-2025-05-14, context-management-2025-06-27", " ,fine-grained-tool-streaming-2025-05-14,"}))
	assert.Nil(t, betas(nil))
	many := betas([]string{strings.Repeat("b,", 100), strings.Repeat("x", 1000)})
	assert.Len(t, many, maxBetas)
	long := betas([]string{strings.Repeat("x", 1000)})
	assert.LessOrEqual(t, len(long[0]), maxBetaBytes+len("…"))
}

// FuzzStreamer: whatever order of events the core gives (text, reasoning and calls in any
// order, a call's arguments and end right after its header, as chat.Event says), the stream
// is one Anthropic's clients can read: message_start first, every event's data JSON of its
// event's type, blocks started in order from 0, each delta and stop for a started block
// that is not stopped yet, and message_stop last, after message_delta.
func FuzzStreamer(f *testing.F) {
	f.Add([]byte{4, 4, 5, 0, 0, 1, 2, 2, 3, 6})
	f.Add([]byte{5, 5, 0, 1, 1, 2, 1, 2, 7, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := &streamer{answer: testAnswer}
		var out []byte
		done := false
		calls, call := 0, -1 // the calls so far; the call whose arguments may come, -1 for none
		for _, op := range ops {
			if done {
				break
			}
			var ev chat.Event
			switch op % 8 {
			case 0:
				ev.Kind, ev.Text, call = chat.EventContent, "t", -1
			case 1:
				ev.Kind, ev.Index, ev.ToolCall = chat.EventToolCall, calls, chat.ToolCall{ID: "toolu_" + strconv.Itoa(calls), Name: "f"}
				call = calls
				calls++
			case 2, 3:
				if call < 0 {
					continue
				}
				ev.Kind, ev.Index, ev.ToolCall = chat.EventToolCall, call, chat.ToolCall{Arguments: `{"a":1}`}
				if op%8 == 3 {
					ev.Kind, call = chat.EventToolCallEnd, -1
				}
			case 4:
				ev.Kind, ev.Text, call = chat.EventReasoning, "r", -1
			case 5:
				ev.Kind, ev.Block, call = chat.EventReasoningBlock, chat.ReasoningBlock{Text: "r", Signature: "s"}, -1
			case 6:
				ev.Kind, ev.Block, call = chat.EventReasoningBlock, chat.ReasoningBlock{Redacted: true, Data: "d"}, -1
			case 7:
				ev.Kind, ev.Finish, done = chat.EventDone, chat.FinishStop, true
			}
			out = s.appendEvent(out, &ev)
		}
		checkStream(t, string(out), done)
	})
}

// checkStream holds a stream's events to what the SDK's MessageStream requires.
func checkStream(t *testing.T, stream string, done bool) {
	t.Helper()
	started, stopped := 0, map[int]bool{}
	var names []string
	for _, e := range strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n\n") {
		if e == "" {
			continue
		}
		head, data, ok := strings.Cut(e, "\ndata: ")
		require.True(t, ok, e)
		name := strings.TrimPrefix(head, "event: ")
		var d struct {
			Type  string `json:"type"`
			Index *int   `json:"index"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &d), data)
		require.Equal(t, name, d.Type)
		names = append(names, name)
		switch name {
		case "content_block_start":
			require.Equal(t, started, *d.Index, "blocks start in order")
			started++
		case "content_block_delta":
			require.Less(t, *d.Index, started)
			require.False(t, stopped[*d.Index], "a delta after its block stopped")
		case "content_block_stop":
			require.Less(t, *d.Index, started)
			require.False(t, stopped[*d.Index], "a block stopped twice")
			stopped[*d.Index] = true
		}
	}
	if len(names) == 0 {
		return
	}
	require.Equal(t, "message_start", names[0])
	if done {
		require.Equal(t, []string{"message_delta", "message_stop"}, names[len(names)-2:])
		require.Len(t, stopped, started, "every block stopped before the end")
	}
}
