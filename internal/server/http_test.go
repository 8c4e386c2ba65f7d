package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/coretest"
	"github.com/nirmata/llm-gateway/internal/observe"
	"github.com/nirmata/llm-gateway/internal/route"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hello = `{"messages":[{"role":"user","content":"hi"}]}`

func serve(t *testing.T, svc *core.Service) *httptest.Server {
	t.Helper()
	return serveLogged(t, svc, zap.NewNop())
}

// serveLogged is serve with the calls observed in log.
func serveLogged(t *testing.T, svc *core.Service, log *zap.Logger) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHTTPHandler(svc, Options{Keys: &auth.Keyring{}, MaxBodyBytes: 1 << 20, Observer: observe.New(log, svc.Metrics(), nil),
		StreamWriteTimeout: time.Minute, BodyReadTimeout: time.Minute}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, method, url, body string) (*http.Response, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e map[string]string
	if resp.StatusCode >= 400 {
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	}
	return resp, e
}

// TestPanicIsA500: a bug is a 500 with a generic message, its detail in the log, and the
// server answers the next request; a stream's slot comes back.
func TestPanicIsA500(t *testing.T) {
	t.Parallel()
	obs, logs := observer.New(zap.InfoLevel)
	log := zap.New(obs)
	svc := coretest.Service(coretest.Panicking{}, log)
	srv := serveLogged(t, svc, log)
	for _, query := range []string{"", "?stream=true"} {
		resp, e := get(t, http.MethodPost, srv.URL+"/llm-apps/chat"+query, hello)
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.Equal(t, "internal error", e["error"])
		assert.Equal(t, "internal", e["code"])
		assert.NotContains(t, e["error"], "secret")
	}
	assert.Equal(t, 2, logs.FilterMessage("panic serving request").Len(), "the detail goes to the log")
	resp, _ := get(t, http.MethodGet, srv.URL+"/healthz", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the server survives")
	families, err := svc.Metrics().Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range families {
		switch f.GetName() {
		case "gateway_upstream_calls_in_flight":
			assert.Zero(t, f.GetMetric()[0].GetGauge().GetValue(), "the slot taken before the panic was given back")
		case "gateway_inflight_requests":
			assert.Zero(t, f.GetMetric()[0].GetGauge().GetValue(), "the requests that panicked ended")
		}
	}
}

// TestStreamPanicEndsTheStream: a bug after the first byte ends the stream with the
// contract's error line, and the detail stays in the log.
func TestStreamPanicEndsTheStream(t *testing.T) {
	t.Parallel()
	obs, logs := observer.New(zap.InfoLevel)
	log := zap.New(obs)
	srv := serveLogged(t, coretest.Service(coretest.PanicsMidStream{}, log), log)
	resp, err := http.Post(srv.URL+"/llm-apps/chat?stream=true", "application/json", strings.NewReader(hello))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `{"type":"error","error":{"code":"internal","message":"internal error"}}`+"\n", string(b))
	assert.Equal(t, 1, logs.FilterMessage("panic serving stream").Len())
}

// TestNoRoute: unknown paths and wrong methods are JSON errors, not net/http's text.
func TestNoRoute(t *testing.T) {
	t.Parallel()
	srv := serve(t, coretest.Service(coretest.Panicking{}, zap.NewNop()))
	resp, e := get(t, http.MethodGet, srv.URL+"/nowhere", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "not_found", e["code"])
	assert.Equal(t, "no route for GET /nowhere", e["error"])
	assert.NotEmpty(t, e["request_id"])

	resp, e = get(t, http.MethodGet, srv.URL+"/llm-apps/chat", "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "unimplemented", e["code"])
	assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))

	resp, e = get(t, http.MethodPost, srv.URL+"/llm-apps/capabilities", "{}")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, http.MethodGet, resp.Header.Get("Allow"))
	assert.Contains(t, e["error"], "method POST is not allowed on /llm-apps/capabilities")

	// A path that is not canonical is not redirected (a 301 would turn the POST into a GET).
	for _, p := range []string{"/llm-apps//chat", "/llm-apps/./chat", "/x/../llm-apps/chat"} {
		resp, e = get(t, http.MethodPost, srv.URL+p, hello)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		assert.Equal(t, "no route for POST "+p, e["error"])
		assert.Empty(t, resp.Header.Get("Location"))
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

// openAIError reads an OpenAI-shaped error answer.
func openAIError(t *testing.T, method, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.NotNil(t, e.Error, "an OpenAI error object")
	assert.NotEmpty(t, resp.Header.Get("X-Request-Id"))
	return resp, e.Error
}

// TestOpenAINoRoute: under /v1 every error is OpenAI's shape, non-canonical paths too.
func TestOpenAINoRoute(t *testing.T) {
	t.Parallel()
	srv := serve(t, coretest.Service(coretest.Panicking{}, zap.NewNop()))
	for _, p := range []string{"/v1", "/v1/", "/v1/embeddings", "/v1//chat/completions", "/v1/./chat/completions", "/x/../v1/chat/completions"} {
		resp, e := openAIError(t, http.MethodPost, srv.URL+p, hello)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		assert.Equal(t, "invalid_request_error", e["type"], p)
		assert.Nil(t, e["code"], p)
		assert.Equal(t, "no route for POST "+p, e["message"])
	}
	resp, e := openAIError(t, http.MethodGet, srv.URL+"/v1/chat/completions", "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "method_not_allowed", e["code"])
	assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
}

// TestOpenAIPanic: a bug is a 500 the SDKs do not retry, on a stream too when it comes
// before the first chunk.
func TestOpenAIPanic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		upstream route.Upstream
		body     string
	}{
		{coretest.Panicking{}, hello},
		{coretest.PanicsMidStream{}, `{"stream":true,` + hello[1:]},
	} {
		srv := serve(t, coretest.Service(tt.upstream, zap.NewNop()))
		resp, e := openAIError(t, http.MethodPost, srv.URL+"/v1/chat/completions", tt.body)
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.Equal(t, "server_error", e["type"])
		assert.Equal(t, "internal_error", e["code"])
		assert.Equal(t, "internal error", e["message"])
		assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
	}
}
