package e2e

// What a hostile client tries, and what the gateway answers: docs/HOSTILE.md's table names
// these tests.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestOversizedHeadsAreJSON: a request line or headers over 64 KiB, which net/http
// refuses before any handler runs, are answered in JSON in the shape of the surface the
// path is under, naming what was too long: 414 for the request line (a 256 KiB query
// parameter), 431 for the headers; so is a malformed head (400). On a connection that
// served a request before, too. A head of many megabytes is answered after net/http's
// bound, not read to its end.
func TestOversizedHeadsAreJSON(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	long := strings.Repeat("c", 256<<10)
	type nirmataError struct {
		Error, Code string
		RequestID   string `json:"request_id"`
	}
	type openaiError struct {
		Error struct{ Message, Type, Code string }
	}
	for _, tt := range []struct {
		name, head string
		status     int
		says, code string
	}{
		{"query parameter", "POST /llm-apps/chat?stream=true&client_type=" + long + " HTTP/1.1\r\nHost: x\r\n", 414,
			`request URI too long: the request line and headers are over 64 KiB (the limit was reached in query parameter "client_type")`, "resource_exhausted"},
		{"query parameter on /v1", "POST /v1/chat/completions?client_type=" + long + " HTTP/1.1\r\nHost: x\r\n", 414,
			`request URI too long: the request line and headers are over 64 KiB (the limit was reached in query parameter "client_type")`, "uri_too_long"},
		{"path", "GET /" + long + " HTTP/1.1\r\nHost: x\r\n", 414,
			"request URI too long: the request line and headers are over 64 KiB (the limit was reached in the path)", "resource_exhausted"},
		{"header", "GET /llm-apps/capabilities HTTP/1.1\r\nHost: x\r\nX-Big: " + long + "\r\n", 431,
			`request headers too large: the request line and headers are over 64 KiB (the limit was reached in header "X-Big")`, "resource_exhausted"},
		{"header on /v1", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testKey + "\r\nX-Big: " + long + "\r\n", 431,
			`request headers too large: the request line and headers are over 64 KiB (the limit was reached in header "X-Big")`, "headers_too_large"},
		{"header on /v1/responses", "POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testKey + "\r\nX-Big: " + long + "\r\n", 431,
			`request headers too large: the request line and headers are over 64 KiB (the limit was reached in header "X-Big")`, "headers_too_large"},
		{"many headers", "GET /llm-apps/capabilities HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Many: "+strings.Repeat("m", 1000)+"\r\n", 80), 431,
			`(the limit was reached in header "X-Many")`, "resource_exhausted"},
		{"malformed header", "GET /v1/models HTTP/1.1\r\nHost: x\r\nNo colon here\r\n", 400,
			"malformed request: ", "invalid_value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body, closed := readResponse(t, rawRequest(t, g.HTTP, tt.head, ""))
			require.Equal(t, tt.status, resp.StatusCode, body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.True(t, closed, "net/http closes the connection after such an answer")
			id := resp.Header.Get("X-Request-Id")
			assert.Regexp(t, "^[0-9a-f]{28}$", id)
			if strings.Contains(tt.head, " /v1/") {
				var e openaiError
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Contains(t, e.Error.Message, tt.says)
				assert.Equal(t, tt.code, e.Error.Code)
				assert.Equal(t, "invalid_request_error", e.Error.Type)
				return
			}
			var e nirmataError
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			assert.Contains(t, e.Error, tt.says)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, id, e.RequestID)
		})
	}

	t.Run("after a request on the same connection", func(t *testing.T) {
		conn := rawRequest(t, g.HTTP, "GET /llm-apps/capabilities HTTP/1.1\r\nHost: x\r\n", "")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, err = io.WriteString(conn, "GET /v1/models?after="+long+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err = http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusRequestURITooLong, resp.StatusCode)
		var e openaiError
		require.NoError(t, json.Unmarshal(body, &e), string(body))
		assert.Contains(t, e.Error.Message, `query parameter "after"`)
	})

	t.Run("many megabytes", func(t *testing.T) {
		conn, err := net.Dial("tcp", g.HTTP)
		require.NoError(t, err)
		defer conn.Close()
		const total = 256 << 20
		wrote := make(chan int64, 1)
		go func() {
			chunk := []byte(strings.Repeat("h", 64<<10))
			n, _ := io.WriteString(conn, "GET /llm-apps/capabilities HTTP/1.1\r\nHost: x\r\nX-Huge: ")
			written := int64(n)
			for written < total {
				n, err := conn.Write(chunk)
				written += int64(n)
				if err != nil {
					break
				}
			}
			wrote <- written
		}()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
		resp, body, _ := readResponse(t, conn)
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
		assert.Contains(t, body, `header \"X-Huge\"`)
		assert.Less(t, <-wrote, int64(total), "the gateway stopped reading: the rest was refused")
	})

	assert.InDelta(t, 9, metricValue(t, g, "gateway_rejected_total", map[string]string{"reason": "too_large"}), 0)
	assert.InDelta(t, 5, metricValue(t, g, "gateway_requests_total", map[string]string{"code": "resource_exhausted", "route": "other", "transport": "rest"}), 0)
	assert.InDelta(t, 1, metricValue(t, g, "gateway_requests_total", map[string]string{"code": "resource_exhausted", "route": "other", "transport": "responses"}), 0)
	logged := 0
	for _, e := range g.logs.FilterMessage("http").All() {
		if fmt.Sprint(e.ContextMap()["status"]) == "414" {
			logged++
		}
	}
	assert.Equal(t, 4, logged, "each has its access line")
}

// TestBogusModelsDoNotPoisonLabels: a hundred and more requests naming models that do not
// exist (all 404) leave a real model its own series in the metrics.
func TestBogusModelsDoNotPoisonLabels(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// attackSchemas are the JSON Schemas of the security review that kept a core busy for
// seconds to minutes while the schema library compiled them, with what the gateway now
// says of each (docs/PROTOCOL.md 13.2).
func attackSchemas() []struct{ name, schema, says string } {
	members := func(keyword, format string, n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","` + keyword + `":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, format, i)
		}
		return b.String() + `}}`
	}
	var chain strings.Builder
	chain.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range 20000 {
		fmt.Fprintf(&chain, `"a%d":{"$ref":"#/$defs/a%d"},`, i, i+1)
	}
	chain.WriteString(`"a20000":{"type":"object"}}}`)
	return []struct{ name, schema, says string }{
		{"anyOf of 40,001", `{"anyOf":[{"minimum":1}` + strings.Repeat(`,{}`, 40000) + `]}`,
			"40001 members in anyOf at /anyOf, at most 1000 are allowed (schema_limits.max_members)"},
		{"20,000 properties", members("properties", `"p%d":{}`, 20000),
			"20000 members in properties at /properties, at most 1000 are allowed (schema_limits.max_members)"},
		{"20,000 patternProperties", members("patternProperties", `"^p%d":{}`, 20000),
			"20000 members in patternProperties at /patternProperties, at most 1000 are allowed (schema_limits.max_members)"},
		{"a $ref chain of 20,000", chain.String(), fmt.Sprintf("%d bytes, at most 262144 are allowed (schema_limits.max_bytes)", chain.Len())},
		{"50 numbers of 1e999999", members("properties", `"p%d":{"minimum":1e999999}`, 50),
			"a number beyond what the gateway reads at /properties/p0/minimum (at most 100 digits, an exponent within ±400)"},
	}
}

// enumAttack is the review's 3 MB enum, apart from attackSchemas: decoding a 3 MB body
// takes each REST surface half a second under the race detector.
func enumAttack() struct{ name, schema, says string } {
	enum := `{"type":"object","properties":{"e":{"enum":[` + strings.TrimSuffix(strings.Repeat(`"`+strings.Repeat("v", 250)+`",`, 12000), ",") + `]}}}`
	return struct{ name, schema, says string }{"a 3 MB enum", enum, fmt.Sprintf("%d bytes, at most 262144 are allowed (schema_limits.max_bytes)", len(enum))}
}

// TestHostileSchemasAreRefused: each attack schema, as a tool's parameters (and one as a
// response_format schema), is a 400 naming the field and the limit on the Nirmata API,
// OpenAI's (its param) and gRPC (InvalidArgument), and never reaches Bedrock: the gateway
// measures it before anything compiles or translates it.
func TestHostileSchemasAreRefused(t *testing.T) {
	t.Parallel()
	refuseAttacks(t, attackSchemas(), true)
}

// TestHostileEnumIsRefused is TestHostileSchemasAreRefused for the 3 MB enum.
func TestHostileEnumIsRefused(t *testing.T) {
	t.Parallel()
	refuseAttacks(t, []struct{ name, schema, says string }{enumAttack()}, false)
}

// refuseAttacks sends each attack schema as a tool's parameters (with format, the first
// also as a response_format schema) on every surface and checks the refusal.
func refuseAttacks(t *testing.T, attacks []struct{ name, schema, says string }, format bool) {
	t.Helper()
	sim := recordSim(t)
	g := start(t, defaultConfig(t), sim.upstream())
	grpcClient := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	const msgs = `"model":"` + testModel + `","messages":[{"role":"user","content":"Use t."}]`
	type field struct {
		param, body string
		grpc        *llmgatewayv1.ChatRequest
	}
	asTool := func(schema string) field {
		return field{"tools[0].function.parameters", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"t","parameters":` + schema + `}}]}`,
			&llmgatewayv1.ChatRequest{Model: testModel, Messages: []*llmgatewayv1.Message{{Role: user, Content: "Use t."}},
				Tools: []*llmgatewayv1.Tool{{Function: &llmgatewayv1.FunctionDefinition{Name: "t", ParametersJson: schema}}}}}
	}
	asFormat := func(schema string) field {
		return field{"response_format.json_schema.schema", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":` + schema + `}}}`,
			&llmgatewayv1.ChatRequest{Model: testModel, Messages: []*llmgatewayv1.Message{{Role: user, Content: "Use t."}},
				ResponseFormat: &llmgatewayv1.ResponseFormat{Type: "json_schema", JsonSchema: &llmgatewayv1.JSONSchemaFormat{Name: "r", SchemaJson: schema}}}}
	}
	t.Run("attacks", func(t *testing.T) {
		for i, a := range attacks {
			fields := []field{asTool(a.schema)}
			if format && i == 0 {
				fields = append(fields, asFormat(a.schema))
			}
			for _, f := range fields {
				t.Run(a.name+"/"+f.param, func(t *testing.T) {
					t.Parallel()
					want := f.param + ": " + a.says

					resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, f.body)
					assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
					var e errorBody
					require.NoError(t, json.Unmarshal(body, &e), "%.300s", body)
					assert.Equal(t, "invalid request: "+want, e.Error)
					assert.Equal(t, "invalid_argument", e.Code)

					resp, body = post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey, f.body)
					assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
					var oe struct {
						Error struct{ Message, Type, Param, Code string }
					}
					require.NoError(t, json.Unmarshal(body, &oe), "%.300s", body)
					assert.Equal(t, f.param, oe.Error.Param)
					assert.Contains(t, oe.Error.Message, want)
					assert.Equal(t, "invalid_request_error", oe.Error.Type)

					_, err := grpcClient.Chat(ctx, f.grpc)
					assert.Equal(t, codes.InvalidArgument, status.Code(err))
					assert.Contains(t, status.Convert(err).Message(), want)
				})
			}
		}
	})
	assert.Empty(t, sim.converseRequests(t), "no attack reached Bedrock")
}

// TestLargeSchemaIsChecked: a large schema within the limits, a Kubernetes Deployment's
// (apps/v1 Deployment and the 112 definitions it refers to, 871 subschemas; without its
// descriptions, which only slow the simulator down), is offered, called by the model and
// its call checked like any other: the model's invalid call of it (a required property
// left out) is reported on REST, its valid call is valid, not unchecked, on gRPC.
func TestLargeSchemaIsChecked(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../internal/toolcheck/testdata/deployment.json")
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(raw, &schema))
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "description")
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(schema)
	deployment, err := json.Marshal(schema)
	require.NoError(t, err)
	// The model writes every property it can: tens of kilobytes of arguments.
	body := func(required string) string {
		return `{"model":"` + testModel + `","max_tokens":32000,"messages":[{"role":"user","content":"Call apply_deployment for web."}],` +
			`"tools":[{"type":"function","function":{"name":"apply_deployment","parameters":{` + required + string(deployment[1:]) + `}}]}`
	}

	sim := recordSim(t, "invalid_tool_args,times=1")
	g := start(t, defaultConfig(t), sim.upstream())
	got := ask(t, g, "nirmata", body(`"required":["spec"],`))
	require.Len(t, got.calls, 1)
	assert.Equal(t, []string{`/: missing required property "spec"`}, got.calls[0].errs, "the fault left spec out")
	assert.Equal(t, "invalid", got.outcome)

	got = ask(t, g, "grpc", body(""))
	require.Len(t, got.calls, 1)
	assert.Equal(t, "apply_deployment", got.calls[0].name)
	assert.Nil(t, got.calls[0].errs)
	assert.Empty(t, got.outcome)
	assert.InDelta(t, 1, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "valid"}), 0)
	assert.InDelta(t, 0, metricValue(t, g, "gateway_tool_calls_total", map[string]string{"outcome": "unchecked"}), 0)
	assert.Len(t, sim.converseRequests(t), 2)
}
