package gateway

// What a hostile client tries, and what the gateway answers: the README's hostile-client
// table names these tests.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func grpcConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestGRPCKeyIsCheckedBeforeTheMessage opens a Chat call that sends its headers and never
// its message. The key is checked in the transport, so the call is refused at once; checked
// in an interceptor, it would wait for a message that never comes (and a flood of calls
// carrying 9 MB each would all be read into memory before being refused).
func TestGRPCKeyIsCheckedBeforeTheMessage(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	conn := grpcConn(t, g.GRPC)
	before := metricValue(t, g, "gateway_rejected_total", map[string]string{"reason": "unauthenticated"})

	for _, md := range []metadata.MD{
		nil,
		metadata.Pairs("authorization", "Bearer wrong"),
		// One right key among wrong ones is still a refusal: one value per call.
		metadata.Pairs("authorization", "Bearer wrong-1", "authorization", "Bearer "+testKey),
		metadata.Pairs("authorization", "Bearer "+testKey, "authorization", "Bearer "+testKey),
	} {
		ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(t.Context(), md), 10*time.Second)
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, llmgatewayv1.ChatService_Chat_FullMethodName)
		require.NoError(t, err)
		err = st.RecvMsg(&llmgatewayv1.ChatResponse{}) // no message was sent
		cancel()
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "metadata %v: %v", md, err)
	}
	after := metricValue(t, g, "gateway_rejected_total", map[string]string{"reason": "unauthenticated"})
	assert.Equal(t, 4.0, after-before, "every refusal is counted")

	// One right key still works.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(conn).Chat(ctx, &llmgatewayv1.ChatRequest{Messages: []*llmgatewayv1.Message{{Role: user, Content: "hi"}}})
	require.NoError(t, err)
}

// TestGRPCKeylessCallsAreBounded: methods that need no key (health, reflection,
// capabilities) are served to callers without one, but only maxKeylessReceives of their
// messages are received at once, so strangers cannot make the gateway hold many large
// messages; long-lived keyless streams hold no place once their message is in.
func TestGRPCKeylessCallsAreBounded(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	conn := grpcConn(t, g.GRPC)
	health := healthpb.NewHealthClient(conn)

	// Watches that stay open take no place: a keyless Check still goes through.
	for range 5 {
		w, err := health.Watch(t.Context(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		_, err = w.Recv()
		require.NoError(t, err)
	}
	_, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)

	// Calls whose message never comes each hold a place while it is awaited.
	var cancels []context.CancelFunc
	for range 2 { // maxKeylessReceives
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		_, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, healthpb.Health_Check_FullMethodName)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		_, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return status.Code(err) == codes.ResourceExhausted
	}, 10*time.Second, 5*time.Millisecond, "a third keyless message waits its turn")

	// A caller with a key is not counted against strangers.
	withKey := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err = health.Check(withKey, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)

	cancels[0]()
	require.Eventually(t, func() bool {
		_, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "an ended call gives its place back")
	cancels[1]()

	// Metadata is bounded like REST headers, and so is the model capabilities echo.
	big := metadata.AppendToOutgoingContext(t.Context(), "x-pad", strings.Repeat("p", 100<<10))
	_, err = health.Check(big, &healthpb.HealthCheckRequest{})
	assert.Error(t, err, "100 KiB of metadata is refused")
	_, err = llmgatewayv1.NewChatServiceClient(conn).GetCapabilities(t.Context(), &llmgatewayv1.GetCapabilitiesRequest{Model: strings.Repeat("m", 3000)})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}

// rawRequest writes head and a partial body on a fresh connection and returns the
// connection, for requests net/http's client would not send.
func rawRequest(t *testing.T, addr, head, partialBody string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, head+"\r\n"+partialBody)
	require.NoError(t, err)
	// A bound for the test, not a synchronisation: a gateway that waits for the rest of
	// the body would leave the read below blocked.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	return conn
}

// readResponse reads one response, and reports whether the gateway closed the connection
// after it.
func readResponse(t *testing.T, conn net.Conn) (*http.Response, string, bool) {
	t.Helper()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_, err = br.ReadByte()
	return resp, string(body), err == io.EOF
}

// TestStalledBodyWithoutKeyIs401AtOnce: a request without a key whose body never arrives
// is answered 401 without waiting for the body, and its connection is closed.
func TestStalledBodyWithoutKeyIs401AtOnce(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	conn := rawRequest(t, g.HTTP, "POST /llm-apps/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n", `{"messages":`)
	resp, body, closed := readResponse(t, conn)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Contains(t, body, `"code":"unauthenticated"`)
	assert.True(t, closed, "the unread body is not drained: the connection closes")
}

// TestStalledBodyWithKeyIsCut: with a key, a body that stops arriving is answered 408
// after body_read_timeout and its connection closed; a call whose body arrived is not
// bound by that deadline however long Bedrock takes.
func TestStalledBodyWithKeyIsCut(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.BodyReadTimeout = 300 * time.Millisecond
	cfg.Sim.FirstTokenDelay = 600 * time.Millisecond // longer than the body timeout
	g := start(t, cfg)

	conn := rawRequest(t, g.HTTP, "POST /llm-apps/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+testKey+"\r\nContent-Length: 1000\r\n", `{"messages":`)
	resp, body, closed := readResponse(t, conn)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.Contains(t, body, `"code":"deadline_exceeded"`)
	assert.True(t, closed)

	resp2, _, body2 := chatOnce(t, g, "")
	assert.Equal(t, http.StatusOK, resp2.StatusCode, "%s", body2)
	stream := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", hello)
	res := readJSONL(t, stream.Body)
	assert.Equal(t, "done", res.last.Type)
}

// TestRESTOneAuthorizationHeader: several Authorization headers are a 401 even when one
// holds a right key.
func TestRESTOneAuthorizationHeader(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	req, err := http.NewRequest(http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat", strings.NewReader(hello))
	require.NoError(t, err)
	req.Header.Add("Authorization", "Bearer wrong")
	req.Header.Add("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// TestClientStringsAreBounded sends megabytes where short strings belong: every answer is
// a bounded JSON error naming the field, and no log line exceeds 16 KiB.
func TestClientStringsAreBounded(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	base := "http://" + g.HTTP + "/llm-apps/chat"
	huge := strings.Repeat("m", 1<<20)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		name, url, body string
		status          int
		says            string
	}{
		{"model in the body", base, `{"model":"` + huge + `",` + msgs + `}`, 400, "model: 1048576 bytes, at most 2048"},
		{"model in the query", base + "?model=" + strings.Repeat("m", 40<<10), `{` + msgs + `}`, 400, "model: 40960 bytes"},
		{"client_type", base + "?client_type=" + strings.Repeat("c", 40<<10), `{` + msgs + `}`, 400, "client_type: 40960 bytes"},
		{"digits in max_tokens", base, `{"max_tokens":` + strings.Repeat("9", 5<<20) + `,` + msgs + `}`, 400, "max_tokens: integer 9999"},
		{"a role", base, `{"messages":[{"role":"` + huge + `","content":"hi"}]}`, 400, "(1048576 bytes)"},
		{"tool_choice", base, `{"tool_choice":"` + huge + `",` + msgs + `}`, 400, "(1048576 bytes)"},
		{"stream flag", base + "?stream=" + strings.Repeat("y", 40<<10), `{` + msgs + `}`, 400, "(40960 bytes)"},
		{"provider", base + "?provider=" + strings.Repeat("p", 40<<10), `{` + msgs + `}`, 400, "(40960 bytes)"},
		{"path", "http://" + g.HTTP + "/" + strings.Repeat("p", 40<<10), `{}`, 404, "no route for POST /ppp"},
		{"path without a key", "http://" + g.HTTP + "/" + strings.Repeat("p", 40<<10), `{}`, 401, "API key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			auth := "Bearer " + testKey
			if strings.HasSuffix(tt.name, "without a key") {
				auth = ""
			}
			resp, body := post(t, tt.url, auth, tt.body)
			assert.Equal(t, tt.status, resp.StatusCode, "%.300s", body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.Contains(t, string(body), tt.says)
			assert.Less(t, len(body), 4<<10, "the error body is bounded")
		})
	}

	// Beyond 64 KiB of request line and headers, net/http answers 431 itself (text/plain:
	// it writes that answer before any handler runs).
	for _, head := range []string{
		"GET /llm-apps/capabilities?model=" + strings.Repeat("c", 100<<10) + " HTTP/1.1\r\nHost: x\r\n",
		"GET /llm-apps/capabilities HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("c", 100<<10) + "\r\n",
	} {
		resp, _, _ := readResponse(t, rawRequest(t, g.HTTP, head, ""))
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	}

	// gRPC: the same bounds.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, &llmgatewayv1.ChatRequest{
		Model: huge, Messages: []*llmgatewayv1.Message{{Role: user, Content: "hi"}},
	})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "model: 1048576 bytes")

	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", TimeKey: "ts", EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder})
	require.NotZero(t, g.logs.Len())
	for _, e := range g.logs.All() {
		line, err := enc.EncodeEntry(e.Entry, e.Context)
		require.NoError(t, err)
		assert.Less(t, line.Len(), 16<<10, "log line %.200s", line.String())
		line.Free()
	}
}

// TestBogusModelsDoNotPoisonLabels: a hundred and more requests naming models that do not
// exist (all 404) leave a real model its own series in the metrics.
func TestBogusModelsDoNotPoisonLabels(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	for i := range 110 {
		resp, _ := post(t, fmt.Sprintf("http://%s/llm-apps/chat?model=anthropic.bogus-%d&client_type=junk-%d", g.HTTP, i, i), "Bearer "+testKey, hello)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
	const real = "mistral.mistral-large-2407-v1:0"
	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat?client_type=kubectl-ai&model="+real, "Bearer "+testKey, hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, 1.0, metricValue(t, g, "gateway_requests_total", map[string]string{"model": real, "client_type": "kubectl-ai", "code": "ok"}))
	assert.Equal(t, 110.0, metricValue(t, g, "gateway_requests_total", map[string]string{"model": "other", "client_type": "other", "code": "not_found"}))
}

// TestAccessDeniedHidesTheAccount: Bedrock's AccessDenied text names the gateway's role
// and account; clients get a generic message on every transport, the log the detail.
func TestAccessDeniedHidesTheAccount(t *testing.T) {
	const text = "User: arn:aws:sts::123456789012:assumed-role/gw/i-0abc is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/x"
	g := fakeBedrock(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"message":%q}`, text)
	})
	for _, query := range []string{"", "?stream=true", "?chunked=true"} {
		resp, e, body := chatOnce(t, g, query)
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode, query)
		assert.NotContains(t, string(body), "123456789012", query)
		assert.Contains(t, e.Error, "refused the gateway's AWS credentials", query)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, &llmgatewayv1.ChatRequest{Messages: []*llmgatewayv1.Message{{Role: user, Content: "hi"}}})
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.NotContains(t, err.Error(), "123456789012")

	logged := false
	for _, e := range g.logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "123456789012") {
			logged = true
		}
	}
	assert.True(t, logged, "the cause is in the log")
}
