package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/coretest"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// anthropicError reads an answer that must be an error in Anthropic's shape, with
// request-id.
func anthropicError(t *testing.T, req *http.Request) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e struct {
		Type  string         `json:"type"`
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.Equal(t, "error", e.Type)
	require.NotNil(t, e.Error, "an Anthropic error object")
	assert.NotEmpty(t, resp.Header.Get("Request-Id"))
	assert.Equal(t, resp.Header.Get("X-Request-Id"), resp.Header.Get("Request-Id"))
	return resp, e.Error
}

func request(t *testing.T, method, url, body string, headers ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return req
}

// TestAnthropicNoRoute: under /v1/messages every error is Anthropic's shape,
// non-canonical paths too; the rest of /v1 stays OpenAI's.
func TestAnthropicNoRoute(t *testing.T) {
	t.Parallel()
	srv := serve(t, coretest.Service(coretest.Panicking{}, zap.NewNop()))
	for _, p := range []string{"/v1/messages/batches", "/v1/messages/", "/v1//messages/count_tokens", "/x/../v1/messages/nothing"} {
		resp, e := anthropicError(t, request(t, http.MethodPost, srv.URL+p, hello))
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		assert.Equal(t, "not_found_error", e["type"], p)
		assert.Equal(t, "no route for POST "+p, e["message"])
	}
	resp, e := anthropicError(t, request(t, http.MethodGet, srv.URL+"/v1/messages", ""))
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "invalid_request_error", e["type"])
	assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	assert.Equal(t, surfaceOf("/v1/chat/completions").transport, openaiSurface.transport)
	assert.Equal(t, surfaceOf("/v1/messagesx").transport, openaiSurface.transport, "only /v1/messages and below")
}

// TestAnthropicPanic: a bug is a 500 api_error the SDKs do not retry.
func TestAnthropicPanic(t *testing.T) {
	t.Parallel()
	srv := serve(t, coretest.Service(coretest.Panicking{}, zap.NewNop()))
	for _, body := range []string{`{"max_tokens":5,` + hello[1:], `{"max_tokens":5,"stream":true,` + hello[1:]} {
		resp, e := anthropicError(t, request(t, http.MethodPost, srv.URL+"/v1/messages", body))
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.Equal(t, "api_error", e["type"])
		assert.Equal(t, "internal error", e["message"])
		assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
	}
}

// TestAnthropicKeys: Anthropic's routes take the key in x-api-key or as a bearer token,
// one of them only; other routes do not read x-api-key.
func TestAnthropicKeys(t *testing.T) {
	t.Parallel()
	const key = "anthropic-key-0123456789"
	keys, err := auth.NewKeyring([]auth.Key{{Key: key}})
	require.NoError(t, err)
	svc := coretest.Service(coretest.Panicking{}, zap.NewNop())
	srv := httptest.NewServer(NewHTTPHandler(svc, Options{Keys: keys, MaxBodyBytes: 1 << 20, Observer: observe.New(zap.NewNop(), svc.Metrics(), nil),
		StreamWriteTimeout: time.Minute, BodyReadTimeout: time.Minute}))
	t.Cleanup(srv.Close)
	const version = "2023-06-01"
	for _, tt := range []struct {
		name    string
		path    string
		headers []string
		status  int
	}{
		{"x-api-key", "/v1/models", []string{"X-Api-Key", key, "Anthropic-Version", version}, http.StatusOK},
		{"bearer", "/v1/models", []string{"Authorization", "Bearer " + key, "Anthropic-Version", version}, http.StatusOK},
		{"both", "/v1/models", []string{"X-Api-Key", key, "Authorization", "Bearer " + key, "Anthropic-Version", version}, http.StatusUnauthorized},
		{"a wrong one", "/v1/models", []string{"X-Api-Key", "nope", "Anthropic-Version", version}, http.StatusUnauthorized},
		{"x-api-key on OpenAI's route", "/v1/models", []string{"X-Api-Key", key}, http.StatusUnauthorized},
	} {
		resp, err := http.DefaultClient.Do(request(t, http.MethodGet, srv.URL+tt.path, "", tt.headers...))
		require.NoError(t, err, tt.name)
		_ = resp.Body.Close()
		assert.Equal(t, tt.status, resp.StatusCode, tt.name)
	}
	resp, e := anthropicError(t, request(t, http.MethodPost, srv.URL+"/v1/messages", hello))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "authentication_error", e["type"])
}
