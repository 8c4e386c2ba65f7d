package audit_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/metrics"
)

func openStore(t *testing.T) audit.Store {
	t.Helper()
	s, err := audit.Open(t.Context(), filepath.Join(t.TempDir(), "audit.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// counter is the value of the series line of m's exposition that starts with series.
func counter(t *testing.T, m *metrics.Metrics, series string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

// TestWriterWritesAtEachLevel: the writer writes what it was given once closed; the full
// level keeps the request and the answer in the chat model's JSON form, a tool's parameters
// as a JSON value, one larger than the bound clipped; a key at metadata keeps neither.
func TestWriterWritesAtEachLevel(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	m := metrics.New()
	w := audit.NewWriter(audit.WriterOptions{Store: store, Level: audit.Full, Keys: map[string]audit.Level{"quiet": audit.Metadata},
		MaxContentBytes: 1024, Metrics: m})
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}},
		Tools: []chat.Tool{{Name: "bash", Parameters: []byte(`{"type":"object"}`)}}}
	resp := &chat.Response{Text: "hello", Finish: chat.FinishStop}
	big := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("é", 2000)}}}
	w.Write(audit.Record{Time: time.Now(), RequestID: "full", Key: "ci"}, req, resp)
	w.Write(audit.Record{Time: time.Now(), RequestID: "quiet", Key: "quiet"}, req, resp)
	w.Write(audit.Record{Time: time.Now(), RequestID: "big", Key: "ci"}, big, resp)
	w.Close(t.Context())

	rec, err := store.Call(t.Context(), "full")
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"bash","parameters":{"type":"object"}}]}`, string(rec.Request))
	assert.JSONEq(t, `{"text":"hello","finish":"stop"}`, string(rec.Answer))
	assert.False(t, rec.Clipped)
	back, err := audit.DecodeRequest(rec.Request)
	require.NoError(t, err)
	assert.Equal(t, req, back, "the request reads back as it was: it can be replayed")

	rec, err = store.Call(t.Context(), "quiet")
	require.NoError(t, err)
	assert.Empty(t, rec.Request, "a key at metadata keeps no content")
	assert.Empty(t, rec.Answer)

	rec, err = store.Call(t.Context(), "big")
	require.NoError(t, err)
	assert.True(t, rec.Clipped)
	var clipped audit.Clipped
	require.NoError(t, json.Unmarshal(rec.Request, &clipped))
	assert.True(t, clipped.Clipped)
	assert.Greater(t, clipped.Bytes, 4000)
	assert.LessOrEqual(t, len(clipped.Prefix), 1024)
	assert.True(t, strings.HasPrefix(clipped.Prefix, `{"model":"m"`))
	_, err = audit.DecodeRequest(rec.Request)
	assert.ErrorIs(t, err, audit.ErrClipped)
	assert.InDelta(t, 3, counter(t, m, "gateway_audit_written_total"), 0)
}

// gatedStore holds each Insert until the test lets it through, and says when one waits.
type gatedStore struct {
	audit.Store
	waiting chan struct{}
	release chan struct{}
}

func (s *gatedStore) Insert(ctx context.Context, records []audit.Record) error {
	s.waiting <- struct{}{}
	<-s.release
	return s.Store.Insert(ctx, records)
}

// TestWriterDropsWhenFull: while the store holds an insert, the queue fills, and what does
// not fit is dropped and counted, without Write waiting; the rest is written once the store
// takes it.
func TestWriterDropsWhenFull(t *testing.T) {
	t.Parallel()
	store := &gatedStore{Store: openStore(t), waiting: make(chan struct{}, 4), release: make(chan struct{})}
	m := metrics.New()
	w := audit.NewWriter(audit.WriterOptions{Store: store, Level: audit.Metadata, Queue: 2, Batch: 1, Metrics: m})
	w.Write(audit.Record{Time: time.Now(), RequestID: "r0"}, nil, nil)
	<-store.waiting // r0's insert holds the writer
	for i := 1; i <= 4; i++ {
		w.Write(audit.Record{Time: time.Now(), RequestID: "r" + strconv.Itoa(i)}, nil, nil)
	}
	assert.InDelta(t, 2, counter(t, m, `gateway_audit_dropped_total{reason="queue_full"}`), 0)
	close(store.release)
	w.Close(t.Context())
	for _, id := range []string{"r0", "r1", "r2"} {
		_, err := store.Call(t.Context(), id)
		assert.NoError(t, err, id)
	}
	_, err := store.Call(t.Context(), "r3")
	assert.ErrorIs(t, err, audit.ErrNotFound)
	assert.InDelta(t, 3, counter(t, m, "gateway_audit_written_total"), 0)
}

// TestWriterStoreDown: a store that fails drops each batch, counted, logged once per
// outage; a Write after Close is dropped too.
func TestWriterStoreDown(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	require.NoError(t, store.Close()) // every call fails from here on
	m := metrics.New()
	core, logs := observer.New(zap.InfoLevel)
	w := audit.NewWriter(audit.WriterOptions{Store: store, Level: audit.Metadata, Batch: 2, Metrics: m, Log: zap.New(core)})
	for i := range 5 {
		w.Write(audit.Record{Time: time.Now(), RequestID: "r" + strconv.Itoa(i)}, nil, nil)
	}
	w.Close(t.Context())
	w.Write(audit.Record{Time: time.Now(), RequestID: "late"}, nil, nil)
	assert.InDelta(t, 5, counter(t, m, `gateway_audit_dropped_total{reason="store_error"}`), 0)
	assert.InDelta(t, 1, counter(t, m, `gateway_audit_dropped_total{reason="draining"}`), 0)
	assert.Equal(t, 1, logs.FilterMessage("audit store write failed: records are dropped until it writes again").Len())
}

// TestWriterRetention: records older than the retention are purged when the writer starts.
func TestWriterRetention(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.NoError(t, store.Insert(t.Context(), []audit.Record{
		{Time: now.Add(-49 * time.Hour), RequestID: "old"}, {Time: now.Add(-47 * time.Hour), RequestID: "recent"}}))
	w := audit.NewWriter(audit.WriterOptions{Store: store, Retention: 48 * time.Hour, Now: func() time.Time { return now }})
	w.Close(t.Context())
	_, err := store.Call(t.Context(), "old")
	assert.ErrorIs(t, err, audit.ErrNotFound)
	_, err = store.Call(t.Context(), "recent")
	assert.NoError(t, err)
}
