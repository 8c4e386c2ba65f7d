package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/audit"
)

const key = "admin-key-0123456789"

// get GETs path from srv with authorization (none when ""), and returns the status and
// the body.
func get(t *testing.T, srv *httptest.Server, path, authorization string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(b, &body), string(b))
	return resp.StatusCode, body
}

// TestAdminAPI: over real HTTP on the embedded store, the usage totals by each grouping and
// between two times, one call's record, and the refusals: no key, a wrong key, a client
// key's place taken by nothing, bad query values, an unknown id.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	store, err := audit.Open(t.Context(), filepath.Join(t.TempDir(), "audit.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	day1 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	require.NoError(t, store.Insert(t.Context(), []audit.Record{
		{Time: day1, RequestID: "r1", Key: "ci", Surface: "openai", ModelServed: "m1", Code: "ok", InputTokens: 10, OutputTokens: 2, CostUSD: 0.5},
		{Time: day1.Add(time.Hour), RequestID: "r2", Key: "ci", Surface: "anthropic", ModelServed: "m2", Code: "ok", InputTokens: 20, OutputTokens: 4, CostUSD: 0.25},
		{Time: day2, RequestID: "r3", Key: "ops", Surface: "grpc", ModelServed: "m1", Code: "ok", InputTokens: 30, OutputTokens: 6, CostUSD: 1},
	}))
	h, err := Handler(Options{Store: store, Keys: []string{key}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	bearer := "Bearer " + key

	status, body := get(t, srv, "/admin/v1/usage?group_by=key", bearer)
	require.Equal(t, http.StatusOK, status, body)
	rows := body["rows"].([]any)
	require.Len(t, rows, 2)
	ci := rows[0].(map[string]any)
	assert.Equal(t, "ci", ci["key"])
	assert.EqualValues(t, 2, ci["requests"])
	assert.EqualValues(t, 30, ci["input_tokens"])
	assert.EqualValues(t, 0.75, ci["cost_usd"])

	status, body = get(t, srv, "/admin/v1/usage?group_by=model,day&from=2026-11-28&to=2026-11-28", bearer)
	require.Equal(t, http.StatusOK, status, body)
	rows = body["rows"].([]any)
	require.Len(t, rows, 2, "the 29th is outside: to is the end of the 28th")
	assert.Equal(t, "2026-11-28", rows[0].(map[string]any)["day"])

	status, body = get(t, srv, "/admin/v1/calls/r2", bearer)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "anthropic", body["surface"])
	assert.Equal(t, "m2", body["model_served"])

	for _, tt := range []struct {
		path, authorization string
		status              int
		message             string
	}{
		{"/admin/v1/usage", "", http.StatusUnauthorized, "missing or unknown admin key: send Authorization: Bearer <admin key>"},
		{"/admin/v1/usage", "Bearer not-the-admin-key-0123", http.StatusUnauthorized, "missing or unknown admin key: send Authorization: Bearer <admin key>"},
		{"/admin/v1/calls/r1", "Basic " + key, http.StatusUnauthorized, "missing or unknown admin key: send Authorization: Bearer <admin key>"},
		{"/admin/v1/usage?group_by=team", bearer, http.StatusBadRequest, `group_by: "team" is not key, model or day`},
		{"/admin/v1/usage?from=yesterday", bearer, http.StatusBadRequest, `from: "yesterday" is neither an RFC 3339 time (2026-11-29T10:00:00Z) nor a date (2026-11-29)`},
		{"/admin/v1/usage?from=2026-11-29&to=2026-11-28", bearer, http.StatusBadRequest, "to: must be after from"},
		{"/admin/v1/calls/nope", bearer, http.StatusNotFound, `no call with request id "nope" is recorded`},
	} {
		status, body := get(t, srv, tt.path, tt.authorization)
		assert.Equal(t, tt.status, status, tt.path)
		assert.Equal(t, tt.message, body["error"], tt.path)
	}
}

// TestAdminAPIOff: without admin keys every request is refused, with one; without a store
// (the audit trail off) the API says so.
func TestAdminAPIOff(t *testing.T) {
	t.Parallel()
	h, err := Handler(Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	status, body := get(t, srv, "/admin/v1/usage", "Bearer "+key)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "the admin API is off: no admin_keys are set", body["error"])

	h, err = Handler(Options{Keys: []string{key}})
	require.NoError(t, err)
	srv2 := httptest.NewServer(h)
	t.Cleanup(srv2.Close)
	status, body = get(t, srv2, "/admin/v1/usage", "Bearer "+key)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "the audit trail is off (audit: off, and no key sets one)", body["error"])

	_, err = Handler(Options{Keys: []string{"short"}})
	assert.ErrorContains(t, err, "admin key 1: shorter than 16 characters")
}
