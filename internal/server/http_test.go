package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrock"
)

// panicking is an upstream with a bug.
type panicking struct{}

func (panicking) Converse(context.Context, string, *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	panic("secret detail of a bug")
}

func (panicking) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	panic("secret detail of a bug")
}

func newTestService(log *zap.Logger) *Service {
	return NewService(panicking{}, Options{
		DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0",
		MaxTools:     128, MaxMessages: 100, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 8,
	}, log)
}

const hello = `{"messages":[{"role":"user","content":"hi"}]}`

func TestRESTPanicIsA500(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	h, err := NewHTTPHandler(t.Context(), newTestService(log), HTTPOptions{Keys: &Keyring{}, MaxBodyBytes: 1 << 20}, log)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/llm-apps/chat", "application/json", strings.NewReader(hello))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	var e map[string]string
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	assert.Equal(t, "internal error", e["error"])
	assert.Equal(t, "internal", e["code"])
	assert.NotContains(t, string(body), "secret")
	assert.Equal(t, 1, logs.FilterMessage("panic serving request").Len(), "the detail goes to the log")

	// The server survives: the next request is answered.
	resp, err = http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// grpcClient serves svc over gRPC on a loopback port for the test's duration.
func grpcClient(t *testing.T, svc *Service, log *zap.Logger) llmgatewayv1.ChatServiceClient {
	t.Helper()
	s, _ := NewGRPCServer(svc, GRPCOptions{Keys: &Keyring{}, MaxMsgBytes: 1 << 20}, log)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(lis) //nolint:errcheck // Stop ends it
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return llmgatewayv1.NewChatServiceClient(conn)
}

func TestGRPCPanicIsInternal(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	_, err := grpcClient(t, newTestService(log), log).Chat(t.Context(), &llmgatewayv1.ChatRequest{
		Messages: []*llmgatewayv1.Message{{Role: "user", Content: "hi"}},
	})
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.NotContains(t, status.Convert(err).Message(), "secret")
	assert.Equal(t, 1, logs.FilterMessage("panic serving request").Len())
}

// panicsMidStream is an upstream whose stream has a bug: its body panics when read.
type panicsMidStream struct{ panicking }

type panickingBody struct{}

func (panickingBody) Read([]byte) (int, error) { panic("secret detail of a bug") }
func (panickingBody) Close() error             { return nil }

func (panicsMidStream) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	return bedrock.NewEventStream(panickingBody{}, nil), nil
}

// A bug once a gRPC stream is relayed (on its own goroutine, see ChatStream) ends the call
// with Internal after an error event, and the server survives it.
func TestGRPCStreamPanicIsInternal(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	client := grpcClient(t, NewService(panicsMidStream{}, newTestService(log).opts, log), log)
	for range 2 { // the second call proves the process survived the first
		st, err := client.ChatStream(t.Context(), &llmgatewayv1.ChatRequest{
			Messages: []*llmgatewayv1.Message{{Role: "user", Content: "hi"}},
		})
		require.NoError(t, err)
		var last *llmgatewayv1.ChatStreamEvent
		for {
			ev, err := st.Recv()
			if err != nil {
				assert.Equal(t, codes.Internal, status.Code(err))
				assert.NotContains(t, status.Convert(err).Message(), "secret")
				break
			}
			last = ev
		}
		require.NotNil(t, last)
		assert.Equal(t, "error", last.GetType())
		assert.NotContains(t, last.String(), "secret")
	}
	assert.Equal(t, 2, logs.FilterMessage("panic serving request").Len(), "the detail goes to the log")
}

func TestApplyQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query           string
		bodyModel       string
		model           string
		stream, chunked bool
		err             string
	}{
		{query: "model=m&provider=bedrock&client_type=NCH", model: "m"},
		{query: "model=q", bodyModel: "b", model: "b"},
		{query: "stream=true", stream: true},
		{query: "stream=1&chunked=TRUE", stream: true, chunked: true},
		{query: "stream=false"},
		{query: "stream=maybe", err: `stream="maybe"`},
		{query: "chunked=yes", err: `chunked="yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			req := &llmgatewayv1.ChatRequest{Model: tt.bodyModel}
			q, err := urlValues(tt.query)
			require.NoError(t, err)
			err = applyQuery(req, q)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.Equal(t, http.StatusBadRequest, classify(err).httpStatus)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.model, req.GetModel())
			assert.Equal(t, tt.stream, req.GetStream())
			assert.Equal(t, tt.chunked, req.GetChunked())
		})
	}
}

func TestStatusRecorderKeepsFlushing(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w := &statusRecorder{ResponseWriter: rec, status: http.StatusOK}
	_, _ = w.Write([]byte("x"))
	require.NoError(t, http.NewResponseController(w).Flush())
	assert.True(t, rec.Flushed)
	assert.True(t, w.wrote)
}

func urlValues(q string) (map[string][]string, error) {
	u, err := url.ParseQuery(q)
	return u, err
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// panicsOnStream answers unary calls but panics when a stream is opened.
type panicsOnStream struct{ panicking }

func TestStreamPanicReleasesTheSlot(t *testing.T) {
	t.Parallel()
	log := zap.NewNop()
	svc := newTestService(log)
	svc.upstream = panicsOnStream{}
	h, err := NewHTTPHandler(t.Context(), svc, HTTPOptions{Keys: &Keyring{}, MaxBodyBytes: 1 << 20}, log)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/llm-apps/chat?stream=true", "application/json", strings.NewReader(hello))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Empty(t, svc.slots, "the slot taken before the panic was given back")
}
