package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/config"
)

// Tool validation and repair end to end (docs/PROTOCOL.md 13.1, 13.2), on every surface and
// stream format, against the simulator: its invalid_tool_args fault answers with calls
// whose arguments break their schema (the first required property left out), and it calls
// a tool again after a repair turn's error results, as a model does.

const policyTool = `{"type":"function","function":{"name":"save_policy","description":"Save a policy",` +
	`"parameters":{"type":"object","properties":{"filename":{"type":"string"},"replicas":{"type":"integer"}},"required":["filename"]}%s}}`

// policyBody is a Nirmata body asking for a save_policy call; extra adds members.
func policyBody(model string, strict bool, extra string) string {
	s := ""
	if strict {
		s = `,"strict":true`
	}
	return `{"model":"` + model + `","messages":[{"role":"user","content":"Call save_policy for p.yaml."}],` +
		`"tools":[` + strings.Replace(policyTool, "%s", s, 1) + `]` + extra + `}`
}

// seenCall is a tool call as a client of a surface reads it; pieces counts the argument
// fragments a stream sent (with validation on: one, the complete arguments).
type seenCall struct {
	id, name, args string
	errs           []string
	pieces         int
}

// seen is an answer as a client of a surface reads it: its calls, finish reason, text, and
// the x-gateway-tool-validation header (REST unary, gRPC header metadata), trailer (REST
// streams, gRPC stream trailer metadata) or metadata.tool_validation.
type seen struct {
	calls  []seenCall
	finish string
	text   string
	// textPieces counts the content fragments a stream sent.
	textPieces int
	outcome    string
	// strict is the x-gateway-strict header (REST) or header metadata (gRPC).
	strict string
}

// surfaces are every surface and stream format; openai ones never show violations.
var surfaces = []string{"nirmata", "jsonl", "chunked", "openai", "openai-sse", "grpc", "grpc-stream"}

// ask sends body (a Nirmata body) on surface and reads the answer as its clients do.
func ask(t *testing.T, g started, surface, body string) seen {
	t.Helper()
	base := "http://" + g.HTTP
	switch surface {
	case "nirmata":
		resp, b := post(t, base+"/llm-apps/chat", "Bearer "+testKey, body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var a struct {
			Message   string
			ToolCalls []struct {
				ID       string
				Function struct{ Name, Arguments string }
				Errs     []string `json:"validation_errors"`
			} `json:"tool_calls"`
			FinishReason string `json:"finish_reason"`
		}
		require.NoError(t, json.Unmarshal(b, &a))
		out := seen{finish: a.FinishReason, text: a.Message, outcome: resp.Header.Get("X-Gateway-Tool-Validation"), strict: resp.Header.Get("X-Gateway-Strict")}
		for _, c := range a.ToolCalls {
			out.calls = append(out.calls, seenCall{id: c.ID, name: c.Function.Name, args: c.Function.Arguments, errs: c.Errs})
		}
		return out
	case "jsonl", "chunked":
		resp := streamPost(t, base+"/llm-apps/chat?stream=true&chunked="+map[string]string{"jsonl": "false", "chunked": "true"}[surface], body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out seen
		if surface == "jsonl" {
			out = readJSONLCalls(t, resp.Body)
		} else {
			out = readChunkedCalls(t, resp.Body)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // trailers are read only at the body's end
		out.outcome, out.strict = resp.Trailer.Get("X-Gateway-Tool-Validation"), resp.Header.Get("X-Gateway-Strict")
		return out
	case "openai", "openai-sse":
		if surface == "openai-sse" {
			body = strings.TrimSuffix(body, "}") + `,"stream":true}`
		}
		resp := streamPost(t, base+"/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		// A stream whose calls are checked declares the trailer up front; one with validation
		// off, the request's or the operator's (which leaves strict tools unenforced), none.
		if surface == "openai-sse" && !strings.Contains(body, `"tool_validation":"off"`) && resp.Header.Get("X-Gateway-Strict") == "" {
			_, declared := resp.Trailer["X-Gateway-Tool-Validation"]
			assert.True(t, declared, "the trailer is declared up front")
		}
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "validation", "nothing of it inside OpenAI objects")
		if surface == "openai" {
			var a struct {
				Choices []struct {
					Message struct {
						Content   *string
						ToolCalls []struct {
							ID       string
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			require.NoError(t, json.Unmarshal(raw, &a))
			m := a.Choices[0].Message
			out := seen{finish: a.Choices[0].FinishReason, outcome: resp.Header.Get("X-Gateway-Tool-Validation"), strict: resp.Header.Get("X-Gateway-Strict")}
			if m.Content != nil {
				out.text = *m.Content
			}
			for _, c := range m.ToolCalls {
				out.calls = append(out.calls, seenCall{id: c.ID, name: c.Function.Name, args: c.Function.Arguments})
			}
			return out
		}
		out := readSSECalls(t, string(raw))
		assert.Empty(t, resp.Header.Get("X-Gateway-Tool-Validation"), "a stream says it in its trailer")
		out.outcome, out.strict = resp.Trailer.Get("X-Gateway-Tool-Validation"), resp.Header.Get("X-Gateway-Strict")
		return out
	case "grpc", "grpc-stream":
		req := grpcRequest(t, body)
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
		c := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
		if surface == "grpc" {
			var hdr metadata.MD
			resp, err := c.Chat(ctx, req, grpc.Header(&hdr))
			require.NoError(t, err)
			out := seen{finish: resp.GetFinishReason().String(), text: resp.GetMessage(), outcome: strings.Join(hdr.Get("x-gateway-tool-validation"), ","),
				strict: strings.Join(hdr.Get("x-gateway-strict"), ",")}
			assert.Equal(t, out.outcome, resp.GetMetadata().GetToolValidation())
			for _, tc := range resp.GetToolCalls() {
				out.calls = append(out.calls, seenCall{id: tc.GetId(), name: tc.GetFunction().GetName(), args: tc.GetFunction().GetArguments(), errs: tc.GetValidationErrors()})
			}
			return out
		}
		st, err := c.ChatStream(ctx, req)
		require.NoError(t, err)
		var out seen
		for {
			ev, err := st.Recv()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			switch {
			case ev.GetContent() != nil:
				out.text, out.textPieces = out.text+ev.GetContent().GetText(), out.textPieces+1
			case ev.GetToolCall() != nil:
				tc := ev.GetToolCall()
				if tc.GetId() != "" {
					require.EqualValues(t, len(out.calls), tc.GetIndex())
					out.calls = append(out.calls, seenCall{id: tc.GetId(), name: tc.GetName()})
					continue
				}
				c := &out.calls[tc.GetIndex()]
				c.args, c.errs, c.pieces = c.args+tc.GetArguments(), tc.GetValidationErrors(), c.pieces+1
			case ev.GetDone() != nil:
				out.finish = ev.GetDone().GetFinishReason().String()
			}
		}
		out.outcome = strings.Join(st.Trailer().Get("x-gateway-tool-validation"), ",")
		hdr, err := st.Header()
		require.NoError(t, err)
		out.strict = strings.Join(hdr.Get("x-gateway-strict"), ",")
		return out
	}
	t.Fatalf("no surface %s", surface)
	return seen{}
}

// readJSONLCalls reads a JSONL stream (3.2): a call is its header line and one arguments
// line, with validation_errors beside the delta.
func readJSONLCalls(t *testing.T, r io.Reader) seen {
	t.Helper()
	var out seen
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l struct {
			Type   string
			Index  int
			Delta  json.RawMessage
			Errs   []string `json:"validation_errors"`
			Finish string   `json:"finish_reason"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		switch l.Type {
		case "content":
			var s string
			require.NoError(t, json.Unmarshal(l.Delta, &s))
			out.text, out.textPieces = out.text+s, out.textPieces+1
		case "tool_call":
			var d struct {
				ID       string
				Function struct {
					Name      string
					Arguments *string
				}
			}
			require.NoError(t, json.Unmarshal(l.Delta, &d))
			if d.ID != "" {
				require.Equal(t, len(out.calls), l.Index)
				assert.Nil(t, l.Errs, "violations come on the arguments line")
				out.calls = append(out.calls, seenCall{id: d.ID, name: d.Function.Name})
				continue
			}
			c := &out.calls[l.Index]
			require.NotNil(t, d.Function.Arguments)
			c.args, c.errs, c.pieces = c.args+*d.Function.Arguments, l.Errs, c.pieces+1
		case "done":
			out.finish = l.Finish
		case "error":
			t.Fatalf("stream failed: %s", sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// readChunkedCalls reads a chunked stream (3.3): a ToolStart per call, with
// validation_errors in its tool_call.
func readChunkedCalls(t *testing.T, r io.Reader) seen {
	t.Helper()
	var out seen
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l chunkedLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		switch l.Type {
		case "Text":
			out.text, out.textPieces = out.text+l.Data, out.textPieces+1
		case "ToolStart":
			var d struct {
				ToolCall struct {
					ID       string
					Function struct{ Name, Arguments string }
					Errs     []string `json:"validation_errors"`
				} `json:"tool_call"`
			}
			require.NoError(t, json.Unmarshal([]byte(l.Data), &d))
			tc := d.ToolCall
			out.calls = append(out.calls, seenCall{tc.ID, tc.Function.Name, tc.Function.Arguments, tc.Errs, 1})
		case "Done":
			var d struct {
				Finish string `json:"finish_reason"`
			}
			require.NoError(t, json.Unmarshal([]byte(l.Data), &d))
			out.finish = d.Finish
		case "Error":
			t.Fatalf("stream failed: %s", l.Data)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// readSSECalls reads an OpenAI stream (10.3) as its accumulators do.
func readSSECalls(t *testing.T, raw string) seen {
	t.Helper()
	var out seen
	for _, ev := range strings.Split(raw, "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(data), &c), data)
		if len(c.Choices) == 0 {
			continue
		}
		ch := c.Choices[0]
		out.text += ch.Delta.Content
		if ch.Delta.Content != "" {
			out.textPieces++
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.ID != "" {
				require.Equal(t, len(out.calls), tc.Index)
				out.calls = append(out.calls, seenCall{id: tc.ID, name: tc.Function.Name})
			}
			if tc.Function.Arguments != "" {
				out.calls[tc.Index].args += tc.Function.Arguments
				out.calls[tc.Index].pieces++
			}
		}
		if ch.FinishReason != nil {
			out.finish = *ch.FinishReason
		}
	}
	return out
}

// finishToolCalls is the tool_calls finish reason as each surface spells it.
func finishToolCalls(surface string) string {
	if strings.HasPrefix(surface, "grpc") {
		return llmgatewayv1.FinishReason_FINISH_REASON_TOOL_CALLS.String()
	}
	return "tool_calls"
}

const missingFilename = `/: missing required property "filename"`

// requireWhole checks a stream sent each call whole, once it was checked: a header and one
// arguments piece.
func requireWhole(t *testing.T, surface string, got seen) {
	t.Helper()
	if surface == "nirmata" || surface == "openai" || surface == "grpc" {
		return
	}
	for _, c := range got.calls {
		assert.Equal(t, 1, c.pieces, "%s: %s's arguments in one piece", surface, c.name)
	}
}

// TestToolValidationReport: by default (report) an invalid call comes back unchanged with
// its violations, and the outcome says invalid; one model call.
func TestToolValidationReport(t *testing.T) {
	t.Parallel()
	for _, surface := range surfaces {
		t.Run(surface, func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args")
			g := start(t, defaultConfig(t), sim.upstream())
			got := ask(t, g, surface, policyBody(testModel, false, ""))
			require.Len(t, got.calls, 1)
			requireWhole(t, surface, got)
			c := got.calls[0]
			assert.Equal(t, "save_policy", c.name)
			assert.NotContains(t, c.args, "filename", "returned unchanged")
			if strings.HasPrefix(surface, "openai") {
				assert.Nil(t, c.errs)
			} else {
				assert.Equal(t, []string{missingFilename}, c.errs)
			}
			assert.Equal(t, "invalid", got.outcome)
			assert.Equal(t, finishToolCalls(surface), got.finish)
			assert.Len(t, sim.converseRequests(t), 1)
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "invalid"}), 0)
		})
	}
}

// TestToolValidationRepair: in repair mode the model gets its turn back with an error
// result and calls again; the client sees only the valid call, and repaired.
func TestToolValidationRepair(t *testing.T) {
	t.Parallel()
	for _, surface := range surfaces {
		t.Run(surface, func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args,times=1")
			g := start(t, defaultConfig(t), sim.upstream())
			got := ask(t, g, surface, policyBody(testModel, false, `,"tool_validation":"repair"`))
			require.Len(t, got.calls, 1)
			requireWhole(t, surface, got)
			c := got.calls[0]
			assert.Equal(t, "save_policy", c.name)
			assert.Contains(t, c.args, `"filename"`)
			assert.Nil(t, c.errs)
			assert.Equal(t, "repaired", got.outcome)
			assert.Equal(t, finishToolCalls(surface), got.finish)
			assert.NotEmpty(t, got.text, "the first answer's text")

			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 2)
			first, second := reqs[0]["messages"].([]any), reqs[1]["messages"].([]any)
			require.Len(t, second, len(first)+2)
			assert.Equal(t, first, second[:len(first)], "the original request first")
			turn := second[len(first)].(map[string]any)
			assert.Equal(t, "assistant", turn["role"])
			var use map[string]any
			for _, b := range turn["content"].([]any) {
				if u, ok := b.(map[string]any)["toolUse"]; ok {
					use = u.(map[string]any)
				}
			}
			require.NotNil(t, use, "the model's own call")
			assert.NotContains(t, use["input"], "filename")
			results := second[len(first)+1].(map[string]any)["content"].([]any)
			require.Len(t, results, 1)
			assert.Equal(t, map[string]any{"toolUseId": use["toolUseId"], "status": "error", "content": []any{map[string]any{
				"text": `Invalid arguments for save_policy: /: missing required property "filename". Call save_policy again with corrected arguments.`}}},
				results[0].(map[string]any)["toolResult"])
			assert.NotEqual(t, use["toolUseId"], c.id, "the call of the second answer")

			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "repaired"}), 0)
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_repair_attempts_total", nil), 0)
		})
	}
}

// TestToolValidationUnrepaired: still invalid when the attempts run out, the last invalid
// call comes back with its violations, never silently; 1 + max_repair_attempts calls.
func TestToolValidationUnrepaired(t *testing.T) {
	t.Parallel()
	for _, surface := range surfaces {
		t.Run(surface, func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args")
			g := start(t, defaultConfig(t), sim.upstream())
			got := ask(t, g, surface, policyBody(testModel, false, `,"tool_validation":"repair"`))
			require.Len(t, got.calls, 1)
			if !strings.HasPrefix(surface, "openai") {
				assert.Equal(t, []string{missingFilename}, got.calls[0].errs)
			}
			assert.Equal(t, "invalid", got.outcome)
			assert.Equal(t, finishToolCalls(surface), got.finish)
			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 3)
			assert.Len(t, reqs[2]["messages"].([]any), len(reqs[0]["messages"].([]any))+2, "only the latest attempt's turn")
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "unrepaired"}), 0)
			assert.InDelta(t, 2, metricValue(t, g, "gateway_tool_repair_attempts_total", nil), 0)
		})
	}
}

// TestRepairStreamsTextFirst: in repair mode a stream's text goes out as it comes, on
// every stream format; only its calls wait for the repair. The upstream sends the first
// answer in one burst, its text and its invalid call together, and holds the repair's model
// call until the client has read the whole text: a stream that kept the text back with the
// calls would never show it.
func TestRepairStreamsTextFirst(t *testing.T) {
	t.Parallel()
	for _, surface := range []string{"jsonl", "chunked", "openai-sse", "grpc-stream"} {
		t.Run(surface, func(t *testing.T) {
			sim := bedrocksim.New(bedrocksim.Options{Faults: []bedrocksim.Fault{mustFault(t, "invalid_tool_args,times=1")}})
			release := make(chan struct{})
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/converse-stream") { // the repair attempt
					select {
					case <-release:
					case <-r.Context().Done():
						return
					}
					sim.ServeHTTP(w, r)
					return
				}
				burst := httptest.NewRecorder()
				sim.ServeHTTP(burst, r)
				maps.Copy(w.Header(), burst.Header())
				w.WriteHeader(burst.Code)
				_, _ = w.Write(burst.Body.Bytes())
			}))
			t.Cleanup(upstream.Close)
			var once sync.Once
			t.Cleanup(func() { once.Do(func() { close(release) }) }) // runs before upstream.Close
			g := start(t, defaultConfig(t), upstreamAt(upstream.URL, 1))

			const text = "I'll call save_policy."
			texts, end := streamTexts(t, g, surface, policyBody(testModel, false, `,"tool_validation":"repair"`))
			got := ""
			for got != text {
				select {
				case piece := <-texts:
					got += piece
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: the text did not arrive while the repair waited; got %q", surface, got)
				}
			}
			once.Do(func() { close(release) })
			e := <-end
			require.NoError(t, e.err)
			require.Len(t, e.args, 1, "the repaired call, after the text")
			assert.Contains(t, e.args[0], `"filename"`)
		})
	}
}

// streamTexts asks for body as a stream on surface, and reads it in the background, the
// request included (an OpenAI stream's headers come with its first chunk): each text piece
// goes to texts as it arrives; once the stream has ended, the arguments of its calls, or
// what failed, go to end.
func streamTexts(t *testing.T, g started, surface, body string) (texts chan string, end chan streamEnd) {
	t.Helper()
	texts, end = make(chan string, 64), make(chan streamEnd, 1)
	if surface == "grpc-stream" {
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
		req := grpcRequest(t, body)
		req.ToolValidation = "repair"
		c := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
		go func() {
			var e streamEnd
			defer func() { end <- e }()
			st, err := c.ChatStream(ctx, req)
			for err == nil {
				var ev *llmgatewayv1.ChatStreamEvent
				if ev, err = st.Recv(); err != nil {
					break
				}
				if c := ev.GetContent(); c != nil {
					texts <- c.GetText()
				}
				if tc := ev.GetToolCall(); tc != nil && tc.GetArguments() != "" {
					e.args = append(e.args, tc.GetArguments())
				}
			}
			if err != io.EOF {
				e.err = err
			}
		}()
		return texts, end
	}
	url := "http://" + g.HTTP + "/llm-apps/chat?stream=true"
	switch surface {
	case "chunked":
		url += "&chunked=true"
	case "openai-sse":
		url, body = "http://"+g.HTTP+"/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"stream":true}`
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	go func() {
		var e streamEnd
		defer func() { end <- e }()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e.err = err
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l struct {
				Type  string
				Delta json.RawMessage
				Data  string
			}
			line, sse := strings.CutPrefix(sc.Text(), "data: ")
			if json.Unmarshal([]byte(line), &l) != nil {
				continue // blank lines, [DONE]
			}
			switch {
			case sse:
				var c struct {
					Choices []struct {
						Delta struct {
							Content   string
							ToolCalls []struct{ Function struct{ Arguments string } } `json:"tool_calls"`
						}
					}
				}
				_ = json.Unmarshal([]byte(line), &c)
				for _, ch := range c.Choices {
					if ch.Delta.Content != "" {
						texts <- ch.Delta.Content
					}
					for _, tc := range ch.Delta.ToolCalls {
						if tc.Function.Arguments != "" {
							e.args = append(e.args, tc.Function.Arguments)
						}
					}
				}
			case l.Type == "content":
				var s string
				_ = json.Unmarshal(l.Delta, &s)
				texts <- s
			case l.Type == "Text":
				texts <- l.Data
			case l.Type == "tool_call":
				var d struct{ Function struct{ Arguments string } }
				if json.Unmarshal(l.Delta, &d) == nil && d.Function.Arguments != "" {
					e.args = append(e.args, d.Function.Arguments)
				}
			case l.Type == "ToolStart":
				var d struct {
					ToolCall struct{ Function struct{ Arguments string } } `json:"tool_call"`
				}
				_ = json.Unmarshal([]byte(l.Data), &d)
				e.args = append(e.args, d.ToolCall.Function.Arguments)
			}
		}
		e.err = sc.Err()
	}()
	return texts, end
}

// streamEnd is how a stream streamTexts read ended: its calls' arguments, or its error.
type streamEnd struct {
	args []string
	err  error
}

// TestStrictToolWithoutNativeStrict: strict reaches Bedrock only on models that have it,
// whose strict calls match their schema (the simulator's fault spares them); elsewhere
// the tool's calls are repaired though tool_validation is report.
func TestStrictToolWithoutNativeStrict(t *testing.T) {
	t.Parallel()
	const native = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	specOf := func(req map[string]any) map[string]any {
		return req["toolConfig"].(map[string]any)["tools"].([]any)[0].(map[string]any)["toolSpec"].(map[string]any)
	}
	for _, surface := range []string{"nirmata", "jsonl", "openai-sse", "grpc-stream"} {
		t.Run(surface, func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args,times=1")
			g := start(t, defaultConfig(t), sim.upstream())
			got := ask(t, g, surface, policyBody(native, true, ""))
			require.Len(t, got.calls, 1)
			assert.Contains(t, got.calls[0].args, `"filename"`)
			assert.Empty(t, got.outcome)
			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 1)
			assert.Equal(t, true, specOf(reqs[0])["strict"])

			got = ask(t, g, surface, policyBody(testModel, true, ""))
			require.Len(t, got.calls, 1)
			requireWhole(t, surface, got)
			assert.Contains(t, got.calls[0].args, `"filename"`)
			assert.Equal(t, "repaired", got.outcome)
			reqs = sim.converseRequests(t)
			require.Len(t, reqs, 3, "the fault hit the call on the model without strict tools, which was repaired")
			assert.NotContains(t, specOf(reqs[1]), "strict", "not sent to a model without it")
		})
	}
}

// TestOperatorOffLeavesStrictUnenforced: the operator's tool_validation off is off: a
// request asking for repair gets nothing checked, and a strict tool on a model without
// native strict tool use is not repaired either; its call comes back as the model wrote it
// (fragments streamed as they come), with x-gateway-strict: unenforced before the first
// byte, on every surface. One model call each.
func TestOperatorOffLeavesStrictUnenforced(t *testing.T) {
	t.Parallel()
	for _, surface := range surfaces {
		t.Run(surface, func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args")
			cfg := defaultConfig(t)
			cfg.ToolValidation = config.ValidationOff
			g := start(t, cfg, sim.upstream())
			got := ask(t, g, surface, policyBody(testModel, true, `,"tool_validation":"repair"`))
			require.Len(t, got.calls, 1)
			assert.NotContains(t, got.calls[0].args, "filename", "returned as the model wrote it")
			assert.Nil(t, got.calls[0].errs)
			assert.Empty(t, got.outcome)
			assert.Equal(t, "unenforced", got.strict)
			assert.Len(t, sim.converseRequests(t), 1, "no repair")
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "unchecked"}), 0)

			got = ask(t, g, surface, policyBody(testModel, false, `,"tool_validation":"off"`))
			assert.Empty(t, got.strict, "no strict tool, nothing to say")
		})
	}
}

// TestToolValidationOff: off checks nothing and says nothing; a stream streams the call
// in fragments as before, and declares no trailer.
func TestToolValidationOff(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "invalid_tool_args")
	g := start(t, defaultConfig(t), sim.upstream())
	for _, surface := range []string{"nirmata", "jsonl"} {
		got := ask(t, g, surface, policyBody(testModel, false, `,"tool_validation":"off"`))
		require.Len(t, got.calls, 1, surface)
		assert.Nil(t, got.calls[0].errs, surface)
		assert.Empty(t, got.outcome, surface)
		if surface == "jsonl" {
			assert.Greater(t, got.calls[0].pieces, 1, "streamed in fragments as Bedrock sends them")
		}
	}
	resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", policyBody(testModel, false, `,"tool_validation":"off"`))
	assert.Empty(t, resp.Header.Get("Trailer"))
	_, _ = io.Copy(io.Discard, resp.Body)

	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, policyBody(testModel, false, `,"tool_validation":"always"`))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.JSONEq(t, `{"error":"invalid request: tool_validation \"always\" is not one of \"off\", \"report\", \"repair\"","code":"invalid_argument","request_id":"`+resp.Header.Get("X-Request-Id")+`"}`, string(body))
	resp = streamPost(t, "http://"+g.HTTP+"/v1/chat/completions", policyBody(testModel, false, `,"tool_validation":"always"`))
	raw, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `"param":"tool_validation"`)
}

// TestRepairKeepsTheFirstReasoning: with thinking on, the answer carries the first
// attempt's signed blocks with the repaired call (docs/BEDROCK.md G); OpenAI clients drop
// them, the reasoning cache restores them under the id the client got, and the next turn
// keeps thinking on. The same for a stream, whose trailer says repaired.
func TestRepairKeepsTheFirstReasoning(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[streamed], func(t *testing.T) {
			t.Parallel()
			sim, g := recordedGateway(t, "invalid_tool_args,times=1")
			params := thinkingParams()
			params.ToolValidation = "repair"
			var msg oaAnswer
			if streamed {
				httpResp, st := oaStream(t, g, testKey, params) // read to its end, where the trailer is
				require.Nil(t, st.failure)
				msg = st.answer
				assert.Equal(t, "repaired", httpResp.Trailer.Get("X-Gateway-Tool-Validation"))
			} else {
				httpResp, resp := oaChat(t, g, testKey, params)
				msg = resp.Choices[0].Message
				assert.Equal(t, "repaired", httpResp.Header.Get("X-Gateway-Tool-Validation"))
				requireThinkingBlock(t, msg, "thinking")
			}
			require.Len(t, msg.ToolCalls, 1)
			assert.Contains(t, msg.ToolCalls[0].Function.Arguments, `"city"`)

			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 2)
			msgs := reqs[1]["messages"].([]any)
			turn := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
			assert.Contains(t, turn[0], "reasoningContent", "the model's turn goes back reasoning first")

			params.Messages = append(params.Messages, msg.param(), oaToolResult(`{"temp_c":21}`, msg.ToolCalls[0].ID))
			httpResp, _ := oaChat(t, g, testKey, params)
			assert.Equal(t, "restored", httpResp.Header.Get("X-Gateway-Thinking"))
			reqs = sim.converseRequests(t)
			require.Len(t, reqs, 3)
			msgs = reqs[2]["messages"].([]any)
			restored := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
			assert.Equal(t, turn[0], restored[0], "the first attempt's block, byte for byte, before the repaired call")
		})
	}
}

// TestAnswerToolValidation: the synthetic json_response tool's input (docs/PROTOCOL.md
// 13.3) is checked against the response_format schema as any call is (13.2). Report
// returns the answer unchanged and says invalid; repair shows the model its own call with
// an error result and returns the corrected answer, repaired. The tool never shows as a
// call, and a stream holds the answer until it is checked.
func TestAnswerToolValidation(t *testing.T) {
	t.Parallel()
	const user = "Weather in Paris?"
	finishStop := func(surface string) string {
		if strings.HasPrefix(surface, "grpc") {
			return llmgatewayv1.FinishReason_FINISH_REASON_STOP.String()
		}
		return "stop"
	}
	weather := func(t *testing.T, text string) map[string]any {
		t.Helper()
		var w map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &w), "one JSON object: %q", text)
		return w
	}
	for _, surface := range surfaces {
		t.Run(surface+"/report", func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args")
			g := start(t, defaultConfig(t), sim.upstream())
			got := ask(t, g, surface, formatBody(testModel, user, ""))
			assert.Empty(t, got.calls, "the answer tool is no call")
			assert.NotContains(t, weather(t, got.text), "city", "returned unchanged: the fault left city out")
			assert.Equal(t, "invalid", got.outcome)
			assert.Equal(t, finishStop(surface), got.finish)
			if surface != "nirmata" && surface != "openai" && surface != "grpc" {
				assert.Equal(t, 1, got.textPieces, "held until checked, then sent whole")
			}
			assert.Len(t, sim.converseRequests(t), 1)
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "invalid"}), 0)
		})
		t.Run(surface+"/repair", func(t *testing.T) {
			sim := recordSim(t, "invalid_tool_args,times=1")
			g := start(t, defaultConfig(t), sim.upstream())
			got := ask(t, g, surface, formatBody(testModel, user, `,"tool_validation":"repair"`))
			assert.Empty(t, got.calls, "the answer tool is no call")
			w := weather(t, got.text)
			assert.Contains(t, w, "city", "the corrected answer")
			assert.Contains(t, w, "temp_c")
			assert.Equal(t, "repaired", got.outcome)
			assert.Equal(t, finishStop(surface), got.finish)

			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 2)
			first, second := reqs[0]["messages"].([]any), reqs[1]["messages"].([]any)
			require.Len(t, second, len(first)+2)
			var use map[string]any
			for _, b := range second[len(first)].(map[string]any)["content"].([]any) {
				if u, ok := b.(map[string]any)["toolUse"]; ok {
					use = u.(map[string]any)
				}
			}
			require.NotNil(t, use, "the model's own call of the answer tool")
			assert.Equal(t, answerTool, use["name"])
			results := second[len(first)+1].(map[string]any)["content"].([]any)
			require.Len(t, results, 1)
			assert.Equal(t, map[string]any{"toolUseId": use["toolUseId"], "status": "error", "content": []any{map[string]any{
				"text": `Invalid arguments for json_response: /: missing required property "city". Call json_response again with corrected arguments.`}}},
				results[0].(map[string]any)["toolResult"])
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "repaired"}), 0)
			assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_repair_attempts_total", nil), 0)
		})
	}
}
