package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

type errorBody struct {
	Error, Code, RequestID string
}

func chatOnce(t *testing.T, g started, query string) (*http.Response, errorBody, []byte) {
	t.Helper()
	return chatOnceWith(t, g, query, hello)
}

// chatOnceWith is chatOnce with a body.
func chatOnceWith(t *testing.T, g started, query, body string) (*http.Response, errorBody, []byte) {
	t.Helper()
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat"+query, "Bearer "+testKey, body)
	var e errorBody
	_ = json.Unmarshal(b, &e)
	return resp, e, b
}

func TestUpstreamFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      string
		attempts   int // the retryer's; AWS_MAX_ATTEMPTS in production
		status     int
		code       string
		retryAfter bool
		upstream   int64  // requests that reached the simulator
		errorCode  string // gateway_upstream_errors_total's error_code, if the call failed
	}{
		{"throttling then recovery", "throttle,times=2", 3, 200, "", false, 3, ""},
		{"throttling exhausted", "throttle", 3, 429, "resource_exhausted", true, 3, "ThrottlingException"},
		{"model not ready is not retried", "model_not_ready", 3, 429, "resource_exhausted", true, 1, "ModelNotReadyException"},
		{"upstream 500 retried, then 502", "internal", 2, 502, "unavailable", false, 2, "InternalServerException"},
		{"upstream 503", "unavailable", 1, 503, "unavailable", true, 1, "ServiceUnavailableException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := recordSim(t, tt.fault)
			g := start(t, defaultConfig(t), upstreamAt(sim.url, tt.attempts))
			resp, e, body := chatOnce(t, g, "")
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.retryAfter, resp.Header.Get("Retry-After") != "")
			assert.Equal(t, tt.upstream, sim.Requests())

			// The metrics tell the same story.
			wantCode := tt.code
			if wantCode == "" {
				wantCode = "ok"
			}
			assert.EqualValues(t, 1, metricValue(t, g, "gateway_requests_total", map[string]string{"route": "chat", "code": wantCode}))
			assert.EqualValues(t, 1, metricValue(t, g, "gateway_request_duration_seconds", map[string]string{"route": "chat"}))
			assert.EqualValues(t, tt.upstream-1, metricValue(t, g, "gateway_upstream_retries_total", nil))
			if tt.errorCode != "" {
				assert.EqualValues(t, 1, metricValue(t, g, "gateway_upstream_errors_total", map[string]string{"error_code": tt.errorCode}))
			} else {
				assert.Positive(t, metricValue(t, g, "gateway_tokens_total", map[string]string{"direction": "input"}))
			}
			assert.Zero(t, metricValue(t, g, "gateway_upstream_calls_in_flight", nil))
			assert.Zero(t, metricValue(t, g, "gateway_inflight_requests", nil))
		})
	}
}

func TestUpstreamHangIs504(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "hang")
	cfg := defaultConfig(t)
	cfg.UpstreamTimeout = 300 * time.Millisecond
	g := start(t, cfg, sim.upstream())
	begin := time.Now()
	resp, e, _ := chatOnce(t, g, "")
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	assert.Equal(t, "deadline_exceeded", e.Code)
	assert.Less(t, time.Since(begin), 5*time.Second)

	resp = streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", hello)
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode, "a stream that never started keeps its status")
}

func TestOverloadIs503(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "hang,times=1")
	cfg := defaultConfig(t)
	cfg.MaxConcurrent = 1
	g := start(t, cfg, sim.upstream())

	// The first call holds the only slot (the simulator hangs it) until its client leaves.
	ctx, cancel := context.WithCancel(t.Context())
	held := make(chan struct{})
	go func() {
		defer close(held)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat", strings.NewReader(hello))
		req.Header.Set("Authorization", "Bearer "+testKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return sim.Requests() == 1 }, 5*time.Second, 10*time.Millisecond)

	resp, e, _ := chatOnce(t, g, "")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "unavailable", e.Code)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.EqualValues(t, 1, sim.Requests(), "refused before reaching Bedrock")
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_rejected_total", map[string]string{"reason": "overloaded"}))
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_upstream_calls_in_flight", nil), "the held call's slot")
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_inflight_requests", nil), "the held call, still being served")

	cancel()
	<-held
	require.Eventually(t, func() bool {
		resp, _, _ := chatOnce(t, g, "")
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond, "the slot is released when the client leaves")
}

// endlessUpstream is a Bedrock whose streams never end: content deltas until the gateway
// hangs up, which closes cut. A unary call gets a short answer. A client that stops
// reading such a stream is sure to stall, whatever the socket buffers hold.
func endlessUpstream(t *testing.T, cfg config.Config) (started, <-chan struct{}) {
	cut := make(chan struct{})
	var once sync.Once
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		writeFrame(t, w, "messageStart", `{"role":"assistant"}`)
		delta := `{"contentBlockIndex":0,"delta":{"text":"` + strings.Repeat("x", 4096) + `"}}`
		for r.Context().Err() == nil {
			if !tryFrame(w, "contentBlockDelta", delta) {
				break
			}
		}
		once.Do(func() { close(cut) })
	}))
	t.Cleanup(upstream.Close)
	return start(t, cfg, upstreamAt(upstream.URL, 1)), cut
}

// waitCut waits for the gateway to hang up on the endless upstream.
func waitCut(t *testing.T, cut <-chan struct{}) {
	t.Helper()
	select {
	case <-cut:
	case <-time.After(60 * time.Second): // a bound for the test, not a synchronisation
		t.Fatal("the stalled stream was never cut")
	}
}

// TestStalledReaderIsCut: a client that stops reading its stream loses it (and with it the
// upstream call and the only max_concurrent slot) once a write has waited too long.
func TestStalledReaderIsCut(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.MaxConcurrent = 1
	cfg.StreamWriteTimeout = 2 * time.Second
	g, cut := endlessUpstream(t, cfg)

	// A small receive buffer: the client's side of the connection fills fast.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.DialContext(t.Context(), "tcp", g.HTTP)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /llm-apps/chat?stream=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", testKey, len(hello), hello)
	require.NoError(t, err)
	statusLine, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200 OK\r\n", statusLine)
	// Never read again. The stream holds the only slot until it is cut…
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_open_streams", nil))
	waitCut(t, cut)
	// …and then gives it back.
	require.Eventually(t, func() bool {
		return metricValue(t, g, "gateway_open_streams", nil) == 0
	}, 10*time.Second, 10*time.Millisecond)
	resp, _, body := chatOnce(t, g, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

	// The access line says why the stream ended, though its client was told nothing.
	var line map[string]any
	require.Eventually(t, func() bool {
		for _, e := range g.logs.FilterMessage("http").AllUntimed() {
			if m := e.ContextMap(); m["code"] == "deadline_exceeded" {
				line = m
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the cut stream's access line")
	assert.Equal(t, "the client read nothing of the stream for stream_write_timeout, so the stream was cut", line["reason"])
	assert.Equal(t, true, line["stream"])
}

// TestGRPCStalledReaderIsCut: the same over gRPC, where a client that stops reading fills
// its flow-control window and the server's Send blocks: the call ends with
// DeadlineExceeded once a Send has waited stream_write_timeout, and the slot comes back.
func TestGRPCStalledReaderIsCut(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.MaxConcurrent = 1
	cfg.StreamWriteTimeout = 2 * time.Second
	g, cut := endlessUpstream(t, cfg)

	// Fixed windows (no BDP growth), so the client's buffer stays at 64 KiB.
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	require.NoError(t, err)
	defer conn.Close()
	req := &llmgatewayv1.ChatRequest{Messages: []*llmgatewayv1.Message{{Role: user, Content: "go"}}}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	stream, err := llmgatewayv1.NewChatServiceClient(conn).ChatStream(ctx, req)
	require.NoError(t, err)
	_, err = stream.Recv() // the stream is open; now never read again
	require.NoError(t, err)
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_open_streams", nil))

	waitCut(t, cut)
	require.Eventually(t, func() bool {
		return metricValue(t, g, "gateway_open_streams", nil) == 0
	}, 10*time.Second, 10*time.Millisecond)
	resp, _, body := chatOnce(t, g, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the slot came back: %s", body)

	// What the client had buffered, then the call's status.
	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
	}
	st := status.Convert(err)
	assert.Equal(t, codes.DeadlineExceeded, st.Code(), "%v", err)
	require.NotEmpty(t, st.Details(), "the status carries ErrorInfo like every other")
	info, ok := st.Details()[0].(*errdetails.ErrorInfo)
	require.True(t, ok, "%T", st.Details()[0])
	assert.Equal(t, "TIMEOUT", info.GetReason())
	assert.NotEmpty(t, info.GetMetadata()["request_id"])
}

func TestRequestLimits(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.MaxMessages = 3
	cfg.MaxMessageBytes = 1000
	g := start(t, cfg)
	tests := map[string]struct{ body, want string }{
		"too many messages": {`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"}]}`, "messages: 4 messages given, at most 3"},
		"message too large": {`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 1001) + `"}]}`, "messages[0].content: 1001 bytes, at most 1000"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, tt.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Contains(t, string(body), tt.want)
		})
	}
}

// TestOversizedFieldIsNamed: a message over max_message_bytes is refused naming the field
// that is over the limit by itself (a part's image or file data, a text, a call's
// arguments), on every surface: OpenAI's param, the Nirmata error, gRPC's status. A
// message over it only in all is named with its largest field.
func TestOversizedFieldIsNamed(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.MaxMessageBytes = 1000
	g := start(t, cfg)
	pngURL, _ := mediaFixtures(t)
	big := strings.Repeat("x", 1001)
	text := `{"type":"text","text":"see"}`
	user := func(parts ...string) string {
		return `{"messages":[{"role":"user","content":[` + strings.Join(parts, ",") + `]}]}`
	}
	for _, tt := range []struct{ name, body, param, says string }{
		{"image", user(text, `{"type":"image_url","image_url":{"url":"`+pngURL+big+`"}}`), "messages[0].content[1].image_url.url", "bytes, at most 1000 are allowed in one message"},
		{"file", user(text, `{"type":"file","file":{"file_data":"data:application/pdf;base64,`+big+`","filename":"a.pdf"}}`), "messages[0].content[1].file.file_data", ""},
		{"text part", user(text, `{"type":"text","text":"`+big+`"}`), "messages[0].content[1].text", ""},
		{"tool call arguments", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"` + big + `"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
			"messages[1].tool_calls[0].function.arguments", ""},
		{"only in all", user(`{"type":"text","text":"`+strings.Repeat("a", 600)+`"}`, `{"type":"text","text":"`+strings.Repeat("b", 601)+`"}`),
			"messages[0]", "messages[0]: 1201 bytes, at most 1000 are allowed (max_message_bytes); the largest field is messages[0].content[1].text (601 bytes)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey, tt.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
			var oe struct {
				Error struct{ Message, Param string }
			}
			require.NoError(t, json.Unmarshal(body, &oe))
			assert.Equal(t, tt.param, oe.Error.Param, oe.Error.Message)
			assert.Contains(t, oe.Error.Message, tt.param+": ")
			assert.Contains(t, oe.Error.Message, tt.says)

			_, e, _ := chatOnceWith(t, g, "", tt.body)
			assert.Contains(t, e.Error, "invalid request: "+tt.param+": ")

			ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
			_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, tt.body))
			assert.Equal(t, codes.InvalidArgument, status.Code(err))
			assert.Contains(t, status.Convert(err).Message(), tt.param+": ")
		})
	}
}

func TestKeysFileWithDigests(t *testing.T) {
	t.Parallel()
	digest := sha256.Sum256([]byte("file-key-0123456789"))
	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("# team A\nsha256:"+hex.EncodeToString(digest[:])+"\n\n  # team B\nplain-key-0123456789\n"), 0o600))
	cfg, err := config.Load([]string{"--sim", "--api-keys-file", file}, func(string) string { return "" })
	require.NoError(t, err)
	g := start(t, cfg)
	for key, want := range map[string]int{"file-key-0123456789": 200, "plain-key-0123456789": 200, testKey: 200, "sha256:" + hex.EncodeToString(digest[:]): 401, "nope": 401} {
		resp, _ := post(t, "http://"+g.HTTP+"/llm-apps/chat", "NIRMATA-API "+key, hello)
		assert.Equal(t, want, resp.StatusCode, key)
	}
	// The access log names the key by identity, never by value.
	var ids []string
	for _, e := range g.logs.FilterMessage("http").AllUntimed() {
		if id, ok := e.ContextMap()["key_id"].(string); ok {
			ids = append(ids, id)
		}
		assert.NotContains(t, e.ContextMap(), "authorization")
	}
	assert.Contains(t, ids, hex.EncodeToString(digest[:4]))
}

// TestDrainLetsStreamsFinish sends SIGTERM's equivalent (Serve's context ends) while a
// stream is in flight: /readyz turns 503, new calls are refused with 503, the stream
// finishes with done, and Serve returns nil.
func TestDrainLetsStreamsFinish(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.Sim.DeltaDelay = 30 * time.Millisecond
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeys = []string{testKey}
	cfg.DrainTimeout = 10 * time.Second
	g, s := startStoppable(t, cfg)

	resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", twoTools)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	first, err := lines.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, first, "content")

	s.cancel()
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + g.HTTP + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusServiceUnavailable
	}, 5*time.Second, 10*time.Millisecond, "/readyz turns 503 while draining")
	r2, e, _ := chatOnce(t, g, "")
	assert.Equal(t, http.StatusServiceUnavailable, r2.StatusCode)
	assert.Equal(t, "unavailable", e.Code)

	res := readJSONL(t, lines)
	assert.Equal(t, "done", res.last.Type, "the in-flight stream finished")
	select {
	case <-s.done:
		assert.NoError(t, s.err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}

// TestDrainTimeoutCancelsWithA503 holds a call past the drain timeout: it is cancelled,
// and its client is told the gateway is shutting down.
func TestDrainTimeoutCancelsWithA503(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "hang")
	cfg := defaultConfig(t)
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeys = []string{testKey}
	cfg.DrainTimeout = 200 * time.Millisecond
	g, s := startStoppable(t, cfg, sim.upstream())

	var wg sync.WaitGroup
	wg.Add(1)
	var status int
	var body []byte
	go func() {
		defer wg.Done()
		req, _ := http.NewRequest(http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat", strings.NewReader(hello))
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			status = resp.StatusCode
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	}()
	// The call was admitted and reached the hanging upstream: its 503 can only come from
	// the drain cancelling it, not from admission refusing it.
	require.Eventually(t, func() bool { return sim.Requests() == 1 }, 10*time.Second, 5*time.Millisecond)
	s.cancel()
	wg.Wait()
	assert.Equal(t, http.StatusServiceUnavailable, status, string(body))
	assert.Contains(t, string(body), "shutting down")
	assert.NoError(t, s.stop())
	assert.EqualValues(t, 1, sim.Requests())
}

// TestDrainTimeoutCutsStreamsSayingSo holds a stream past the drain timeout: it is cut
// with an error line that says the gateway is shutting down, in those words only, not the
// upstream read that the cut failed.
func TestDrainTimeoutCutsStreamsSayingSo(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.Sim.DeltaDelay = time.Minute // the stream outlives the drain
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeys = []string{testKey}
	cfg.DrainTimeout = 100 * time.Millisecond
	g, s := startStoppable(t, cfg)

	resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", twoTools)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	first, err := lines.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, first, "content")

	s.cancel()
	res := readJSONL(t, lines)
	require.Equal(t, "error", res.last.Type)
	assert.Equal(t, "unavailable", res.last.Error.Code)
	assert.Equal(t, "the gateway is shutting down; retry on another instance", res.last.Error.Message)
	assert.NoError(t, s.stop())
}

// startStoppable serves the gateway of cfg and opts and lets the test end its Serve
// context, as SIGTERM does.
func startStoppable(t *testing.T, cfg config.Config, opts ...gateway.Option) (started, *serving) {
	addrs, s := serve(t, cfg, zap.NewNop(), opts...)
	return started{Addrs: addrs}, s
}
