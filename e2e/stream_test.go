package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// twoTools asks for two parallel tool calls, one of them without arguments.
const twoTools = `{
  "messages": [{"role": "user", "content": "Weather and time in Paris? Use get_weather and get_time."}],
  "tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
    {"name": "get_time", "description": "Current time", "parameters": {"type": "object", "properties": {}}}
  ],
  "tool_choice": "auto"
}`

// jsonlLine is one line of docs/PROTOCOL.md 3.2, decoded strictly enough to check it.
type jsonlLine struct {
	Type         string          `json:"type"`
	Delta        json.RawMessage `json:"delta"`
	Index        *int            `json:"index"`
	FinishReason string          `json:"finish_reason"`
	Usage        *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type jsonlResult struct {
	text      string
	calls     []call // by index
	last      jsonlLine
	lineCount int
}

type call struct{ id, name, args string }

// readJSONL parses a JSONL stream as a docs/PROTOCOL.md 3.2 client does, asserting the rules on
// the way: dense indices, a header (id, type, name, no arguments) first for each index,
// nothing after done or error.
func readJSONL(t *testing.T, r io.Reader) jsonlResult {
	t.Helper()
	var res jsonlResult
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		require.NotEqual(t, "done", res.last.Type, "nothing after done")
		require.NotEqual(t, "error", res.last.Type, "nothing after error")
		var l jsonlLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		res.lineCount++
		switch l.Type {
		case "content":
			var s string
			require.NoError(t, json.Unmarshal(l.Delta, &s))
			res.text += s
		case "tool_call":
			require.NotNil(t, l.Index)
			var d struct {
				ID       *string `json:"id"`
				Type     string  `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			}
			require.NoError(t, json.Unmarshal(l.Delta, &d))
			if *l.Index == len(res.calls) { // first line of a new index
				require.NotNil(t, d.ID, "the first line of an index carries the id: %s", sc.Text())
				require.NotNil(t, d.Function.Name)
				assert.Equal(t, "function", d.Type)
				assert.Nil(t, d.Function.Arguments, "the first line carries no arguments key")
				res.calls = append(res.calls, call{id: *d.ID, name: *d.Function.Name})
				continue
			}
			require.Less(t, *l.Index, len(res.calls), "indices are dense: %s", sc.Text())
			require.NotNil(t, d.Function.Arguments, sc.Text())
			res.calls[*l.Index].args += *d.Function.Arguments
		case "done", "error":
		default:
			t.Fatalf("unknown line type: %s", sc.Text())
		}
		res.last = l
	}
	require.NoError(t, sc.Err())
	return res
}

func streamPost(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "NIRMATA-API "+testKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func simGateway(t *testing.T, faults ...string) started {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.Sim.Faults = faults
	return start(t, cfg)
}

func TestJSONLStream(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	base := "http://" + g.HTTP + "/llm-apps/chat"

	// The unary answer is the reference the stream must reassemble to.
	resp, body := post(t, base, "Bearer "+testKey, twoTools)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var unary chatResponse
	require.NoError(t, json.Unmarshal(body, &unary))
	require.Len(t, unary.ToolCalls, 2)

	for name, url := range map[string]string{
		"query": base + "?stream=true",
		"body":  base,
	} {
		t.Run(name, func(t *testing.T) {
			reqBody := twoTools
			if name == "body" {
				reqBody = strings.Replace(twoTools, `"tool_choice": "auto"`, `"tool_choice": "auto", "stream": true`, 1)
			}
			resp := streamPost(t, url, reqBody)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
			res := readJSONL(t, resp.Body)
			assert.Equal(t, "done", res.last.Type)
			assert.Equal(t, "tool_calls", res.last.FinishReason)
			require.NotNil(t, res.last.Usage)
			assert.Positive(t, res.last.Usage.TotalTokens)
			assert.Equal(t, *unary.Message, res.text)
			require.Len(t, res.calls, 2)
			for i, c := range res.calls {
				assert.Equal(t, unary.ToolCalls[i].ID, c.id)
				assert.Equal(t, unary.ToolCalls[i].Function.Name, c.name)
				assert.JSONEq(t, unary.ToolCalls[i].Function.Arguments, c.args, "fragments reassemble to the arguments")
			}
			assert.Equal(t, "{}", res.calls[1].args, "a tool with no input gets {}")
			assert.Greater(t, res.lineCount, 8, "text and arguments come in several deltas")
		})
	}
	assert.EqualValues(t, 2, metricValue(t, g, "gateway_requests_total", map[string]string{"route": "chat_stream", "code": "ok"}))
	assert.EqualValues(t, 2, metricValue(t, g, "gateway_stream_first_event_seconds", nil))
	assert.EqualValues(t, 6, metricValue(t, g, "gateway_tool_calls_total", nil), "2 unary + 2×2 streamed")
	assert.Zero(t, metricValue(t, g, "gateway_open_streams", nil), "every stream was closed")
}

// chunkedLine is exactly what the deployed gollm Nirmata provider decodes.
type chunkedLine struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data string `json:"data,omitempty"`
}

type chunkedResult struct {
	text  string
	calls []gollmToolCall
	err   string
	types []string
}

// readChunked parses as the gollm provider does: Text appends, ToolStart decodes
// {"tool_call":…} and needs an id, Error ends the stream, other types are skipped.
func readChunked(t *testing.T, r io.Reader) chunkedResult {
	t.Helper()
	var res chunkedResult
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		require.Empty(t, res.err, "nothing after Error")
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var d chunkedLine
		require.NoError(t, json.Unmarshal([]byte(line), &d), line)
		assert.NotEmpty(t, d.ID)
		res.types = append(res.types, d.Type)
		switch d.Type {
		case "Text":
			res.text += d.Data
		case "ToolStart":
			var tool struct {
				ToolCall gollmToolCall `json:"tool_call"`
			}
			require.NoError(t, json.Unmarshal([]byte(d.Data), &tool), d.Data)
			require.NotEmpty(t, tool.ToolCall.ID)
			assert.True(t, json.Valid([]byte(tool.ToolCall.Function.Arguments)), "complete arguments: %s", tool.ToolCall.Function.Arguments)
			res.calls = append(res.calls, tool.ToolCall)
		case "Error":
			require.NotEmpty(t, d.Data, "the gollm client ignores an Error without data")
			res.err = d.Data
		}
	}
	require.NoError(t, sc.Err())
	return res
}

func TestChunkedStream(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	url := "http://" + g.HTTP + "/llm-apps/chat?model=" + testModel + "&chunked=true&provider=bedrock&stream=true"
	resp := streamPost(t, url, twoTools)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	res := readChunked(t, resp.Body)
	assert.Empty(t, res.err)
	assert.Contains(t, res.text, "get_weather")
	require.Len(t, res.calls, 2, "one ToolStart per call")
	assert.Equal(t, "get_weather", res.calls[0].Function.Name)
	assert.Equal(t, "get_time", res.calls[1].Function.Name)
	assert.Equal(t, "{}", res.calls[1].Function.Arguments)
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.calls[0].Function.Arguments), &args))
	assert.Contains(t, args, "city")
	assert.Contains(t, res.types, "Text")

	// The next turn, with history as the provider's streaming mode keeps it: one assistant
	// message per ToolStart, then the text as a separate assistant message, then a result.
	msgs := []gollmMessage{{Role: "user", Content: "Weather and time in Paris? Use get_weather and get_time."}}
	for _, c := range res.calls {
		msgs = append(msgs, gollmMessage{Role: "assistant", ToolCalls: []gollmToolCall{c}})
	}
	msgs = append(msgs, gollmMessage{Role: "assistant", Content: res.text},
		gollmMessage{Role: "tool", ToolCallID: res.calls[0].ID, Content: `{"temp_c":21}`})
	var req map[string]any
	require.NoError(t, json.Unmarshal([]byte(twoTools), &req))
	req["messages"] = msgs
	body, err := json.Marshal(req)
	require.NoError(t, err)
	resp = streamPost(t, url, string(body))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	res = readChunked(t, resp.Body)
	assert.Empty(t, res.err)
	// The provider answered only get_weather: the gateway turns parallel calls off, and the
	// model asks for get_time again, alone (docs/PROTOCOL.md 13.4).
	require.Len(t, res.calls, 1)
	assert.Equal(t, "get_time", res.calls[0].Function.Name)
}

func TestGRPCChatStream(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	stream, err := llmgatewayv1.NewChatServiceClient(conn).ChatStream(ctx, grpcRequest(t, twoTools))
	require.NoError(t, err)
	var text string
	args := map[int32]string{}
	names := map[int32]string{}
	var last *llmgatewayv1.ChatStreamEvent
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		last = ev
		switch e := ev.GetEvent().(type) {
		case *llmgatewayv1.ChatStreamEvent_Content:
			text += e.Content.GetText()
		case *llmgatewayv1.ChatStreamEvent_ToolCall:
			tc := e.ToolCall
			if tc.GetId() != "" {
				names[tc.GetIndex()] = tc.GetName()
				assert.Empty(t, tc.GetArguments())
			}
			args[tc.GetIndex()] += tc.GetArguments()
		}
	}
	require.NotNil(t, last)
	require.NotNil(t, last.GetDone(), "the last event is done")
	assert.Equal(t, llmgatewayv1.FinishReason_FINISH_REASON_TOOL_CALLS, last.GetDone().GetFinishReason())
	assert.Positive(t, last.GetDone().GetUsage().GetTotalTokens())
	assert.NotEmpty(t, text)
	assert.Equal(t, map[int32]string{0: "get_weather", 1: "get_time"}, names)
	assert.Equal(t, "{}", args[1])
	assert.True(t, json.Valid([]byte(args[0])))
}

func TestStreamFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault      string
		httpStatus int    // before the first byte
		code       string // the error line's code after it
	}{
		{fault: "throttle,mode=stream", httpStatus: 429},
		{fault: "model_not_ready,mode=stream", httpStatus: 429},
		{fault: "stream_exception,exception=throttlingException", code: "resource_exhausted"},
		{fault: "stream_exception,exception=modelStreamErrorException", code: "unavailable"},
		{fault: "stream_exception,exception=internalServerException", code: "unavailable"},
		{fault: "stream_exception,exception=validationException", code: "invalid_argument"},
		{fault: "truncate", code: "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			t.Parallel()
			g := simGateway(t, tt.fault)
			url := "http://" + g.HTTP + "/llm-apps/chat?stream=true"

			resp := streamPost(t, url, twoTools)
			if tt.httpStatus != 0 {
				require.Equal(t, tt.httpStatus, resp.StatusCode)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.NotEmpty(t, resp.Header.Get("Retry-After"))
				var e map[string]string
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
				assert.Equal(t, "resource_exhausted", e["code"])
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode)
			res := readJSONL(t, resp.Body)
			require.Equal(t, "error", res.last.Type, "the last line is the error, no done")
			require.NotNil(t, res.last.Error)
			assert.Equal(t, tt.code, res.last.Error.Code)
			assert.NotEmpty(t, res.last.Error.Message)

			// Chunked: Error is the last line.
			resp = streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?chunked=true", twoTools)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.NotEmpty(t, readChunked(t, resp.Body).err)

			// gRPC: the error event, then the same code as the call's status.
			conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer conn.Close()
			ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
			st, err := llmgatewayv1.NewChatServiceClient(conn).ChatStream(ctx, grpcRequest(t, twoTools))
			require.NoError(t, err)
			var last *llmgatewayv1.ChatStreamEvent
			for {
				ev, err := st.Recv()
				if err != nil {
					assert.NotEqual(t, codes.OK, status.Code(err))
					assert.NotEqual(t, io.EOF, err)
					break
				}
				last = ev
			}
			require.NotNil(t, last)
			require.NotNil(t, last.GetError(), "the last event is the error")
			assert.Equal(t, tt.code, codeName(codes.Code(last.GetError().GetCode())))
		})
	}
}

// fakeBedrock streams whatever its handler writes, for tests that control timing.
func fakeBedrock(t *testing.T, h http.HandlerFunc) started {
	upstream := httptest.NewServer(h)
	t.Cleanup(upstream.Close)
	return start(t, defaultConfig(t), upstreamAt(upstream.URL, 1))
}

// tryFrame writes and flushes one event-stream frame, and reports whether the write
// succeeded.
func tryFrame(w http.ResponseWriter, eventType, payload string) bool {
	msg := eventstream.Message{Payload: []byte(payload)}
	msg.Headers.Set(":message-type", eventstream.StringValue("event"))
	msg.Headers.Set(":event-type", eventstream.StringValue(eventType))
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, msg); err != nil {
		return false
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return false
	}
	return http.NewResponseController(w).Flush() == nil
}

func writeFrame(t *testing.T, w http.ResponseWriter, eventType, payload string) {
	msg := eventstream.Message{Payload: []byte(payload)}
	msg.Headers.Set(":message-type", eventstream.StringValue("event"))
	msg.Headers.Set(":event-type", eventstream.StringValue(eventType))
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	var buf bytes.Buffer
	require.NoError(t, eventstream.NewEncoder().Encode(&buf, msg))
	_, _ = w.Write(buf.Bytes())
	w.(http.Flusher).Flush()
}

// TestFirstLineArrivesWhileUpstreamHoldsTheRest proves lines are flushed per event, not
// buffered: the client reads the first delta while Bedrock has not sent the rest yet.
func TestFirstLineArrivesWhileUpstreamHoldsTheRest(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	g := fakeBedrock(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		writeFrame(t, w, "messageStart", `{"role":"assistant"}`)
		writeFrame(t, w, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"first"}}`)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		writeFrame(t, w, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" second"}}`)
		writeFrame(t, w, "contentBlockStop", `{"contentBlockIndex":0}`)
		writeFrame(t, w, "messageStop", `{"stopReason":"end_turn"}`)
		writeFrame(t, w, "metadata", `{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}`)
	})
	for _, query := range []string{"stream=true", "chunked=true"} {
		resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?"+query, hello)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		lines := bufio.NewReader(resp.Body)
		got := make(chan string, 1)
		go func() {
			l, _ := lines.ReadString('\n')
			got <- l
		}()
		select {
		case l := <-got:
			assert.Contains(t, l, "first", query)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the first line did not arrive while the upstream held the rest", query)
		}
		release <- struct{}{}
		rest, err := io.ReadAll(lines)
		require.NoError(t, err)
		assert.Contains(t, string(rest), "second")
	}
}

// TestClientDisconnectCancelsUpstream proves a client that goes away cancels the Bedrock
// call at once.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	g := fakeBedrock(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		writeFrame(t, w, "messageStart", `{"role":"assistant"}`)
		writeFrame(t, w, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"thinking"}}`)
		<-r.Context().Done()
		close(cancelled)
	})
	req, err := http.NewRequest(http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat?stream=true", strings.NewReader(hello))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, "thinking")
	resp.Body.Close() // hang up mid-stream
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not cancelled when the client went away")
	}
}

const hello = `{"messages":[{"role":"user","content":"hi"}]}`

// codeName is a gRPC code as the REST surfaces name it: "resource_exhausted" for
// ResourceExhausted (docs/PROTOCOL.md 5).
func codeName(c codes.Code) string {
	var b strings.Builder
	prev := ' '
	for _, r := range c.String() {
		if unicode.IsUpper(r) && unicode.IsLower(prev) { // a word starts: "OK" is one word
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}
