package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/loadtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// kinds are the two proxies the command serves.
var kinds = map[string]func(*url.URL, http.RoundTripper) http.Handler{"reverse": newHandler, "raw": newRawHandler}

// proxyTo serves the baseline of the given kind in front of upstream.
func proxyTo(t *testing.T, kind string, upstream http.Handler) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	target, err := url.Parse(up.URL)
	require.NoError(t, err)
	tr := newTransport()
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(kinds[kind](target, tr))
	t.Cleanup(srv.Close)
	return srv
}

// The upstream gets the client's request as sent: path, body and Authorization untouched,
// no X-Forwarded-* added; the client gets the upstream's status, headers and body.
func TestForwardsBytesUnchanged(t *testing.T) {
	t.Parallel()
	for kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testForwardsBytesUnchanged(t, kind)
		})
	}
}

func testForwardsBytesUnchanged(t *testing.T, kind string) {
	var got *http.Request
	var gotBody []byte
	srv := proxyTo(t, kind, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Amzn-RequestId", "abc")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	sc, err := loadtest.Lookup("bedrock-unary", loadtest.DefaultModel)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+sc.Path, bytes.NewReader(sc.Body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer baseline")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, `{"ok":true}`, string(body))
	assert.Equal(t, "abc", resp.Header.Get("X-Amzn-RequestId"))
	require.NotNil(t, got)
	assert.Equal(t, sc.Path, got.URL.RequestURI())
	assert.Equal(t, sc.Body, gotBody)
	assert.Equal(t, "Bearer baseline", got.Header.Get("Authorization"))
	assert.Empty(t, got.Header.Get("X-Forwarded-For"))
}

// Streams through the proxy arrive whole, as the load generator judges them.
func TestStreamsThroughTheSimulator(t *testing.T) {
	t.Parallel()
	for kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testStreamsThroughTheSimulator(t, kind)
		})
	}
}

func testStreamsThroughTheSimulator(t *testing.T, kind string) {
	sim := bedrocksim.New(bedrocksim.Options{})
	t.Cleanup(sim.Close)
	srv := proxyTo(t, kind, sim)
	for _, name := range []string{"bedrock-unary", "bedrock-stream"} {
		sc, err := loadtest.Lookup(name, loadtest.DefaultModel)
		require.NoError(t, err)
		client := loadtest.NewClient(4, 10*time.Second)
		t.Cleanup(client.CloseIdleConnections)
		res := loadtest.NewRunner(loadtest.Config{
			Client: client, URL: srv.URL + sc.Path, Body: sc.Body, Format: sc.Format, Expect: sc.Expect,
			Header: http.Header{"Authorization": {"Bearer baseline"}}, Concurrency: 4, Requests: 200,
		}).Run(t.Context())
		assert.Equal(t, 200, res.Counts[loadtest.OK], "%s: counts %v statuses %v", name, res.Counts, res.Statuses)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	for kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testMetrics(t, kind)
		})
	}
}

func testMetrics(t *testing.T, kind string) {
	srv := proxyTo(t, kind, http.NotFoundHandler())
	client := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	before, err := loadtest.Mallocs(t.Context(), client, srv.URL+"/metrics")
	require.NoError(t, err)
	after, err := loadtest.Mallocs(t.Context(), client, srv.URL+"/metrics")
	require.NoError(t, err)
	assert.Greater(t, after, before, "serving the page allocates")
}

// A stream's bytes reach the client as the upstream writes them, not when it ends: the
// upstream waits to finish until the client has read the first event.
func TestStreamPassesThroughAsWritten(t *testing.T) {
	t.Parallel()
	for kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			read := make(chan struct{})
			srv := proxyTo(t, kind, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("first\n"))
				http.NewResponseController(w).Flush()
				select {
				case <-read:
				case <-r.Context().Done():
					return
				}
				_, _ = w.Write([]byte("second\n"))
			}))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/stream", nil)
			require.NoError(t, err)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			line, err := br.ReadString('\n')
			require.NoError(t, err, "the first event did not arrive before the stream ended")
			assert.Equal(t, "first\n", line)
			close(read)
			rest, err := io.ReadAll(br)
			require.NoError(t, err)
			assert.Equal(t, "second\n", string(rest))
		})
	}
}
