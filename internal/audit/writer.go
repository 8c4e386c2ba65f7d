package audit

import (
	"context"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/metrics"
)

// Defaults of WriterOptions' zero fields.
const (
	DefaultQueue = 4096
	// DefaultBatch is large because a batch is one transaction: each commit of the
	// embedded store rewrites the pages it touched and those above them, and syncs the
	// file, so the fewer commits the less a record costs; under 1,024 calls a second,
	// FlushEvery ends the batch.
	DefaultBatch           = 1024
	DefaultFlushEvery      = time.Second
	DefaultInsertTimeout   = 5 * time.Second
	DefaultMaxContentBytes = 256 << 10
	// purgeEvery is how often records past their retention are deleted.
	purgeEvery = time.Hour
)

// WriterOptions configures a Writer.
type WriterOptions struct {
	Store Store
	// Level is the level of the calls of keys without one of their own in Keys.
	Level Level
	// Keys holds the levels of the keys that set one, by the identity the keyring gives
	// their calls.
	Keys map[string]Level
	// MaxContentBytes bounds a record's request and its answer each
	// (audit_max_content_bytes); 0 is DefaultMaxContentBytes.
	MaxContentBytes int
	// Queue bounds the records waiting for the store; Batch is how many one insert takes
	// at most; FlushEvery is the longest a record waits for its batch to fill;
	// InsertTimeout bounds one insert. Zero fields take the defaults.
	Queue, Batch  int
	FlushEvery    time.Duration
	InsertTimeout time.Duration
	// Retention is how long records are kept; 0 keeps them.
	Retention time.Duration
	Metrics   *metrics.Metrics
	Log       *zap.Logger
	// Now is the clock of retention; nil is time.Now.
	Now func() time.Time
}

// Writer writes records to a Store off the request path: Write queues, and one goroutine
// takes the queue in batches, so a slow store costs a call nothing. A full queue, or a
// store that refuses or cannot be reached, drops records, which
// gateway_audit_dropped_total counts: the calls are served all the same. Safe for
// concurrent use.
type Writer struct {
	opts  WriterOptions
	queue chan pending
	// done closes when the goroutine has flushed what it had and ended.
	done chan struct{}
	stop context.CancelFunc
	// closing guards queue against a Write after Close.
	mu      sync.RWMutex
	closing bool
	// failing: the last insert failed, so the next success is logged.
	failing bool
}

// pending is a queued record, with the content EncodeContent turns into its Request and
// Answer in the writer's goroutine.
type pending struct {
	rec  Record
	req  *chat.Request
	resp *chat.Response
}

// NewWriter starts a Writer. Close it to flush what is queued.
func NewWriter(opts WriterOptions) *Writer {
	opts.Queue = orDefault(opts.Queue, DefaultQueue)
	opts.Batch = orDefault(opts.Batch, DefaultBatch)
	opts.MaxContentBytes = orDefault(opts.MaxContentBytes, DefaultMaxContentBytes)
	opts.FlushEvery = orDefault(opts.FlushEvery, DefaultFlushEvery)
	opts.InsertTimeout = orDefault(opts.InsertTimeout, DefaultInsertTimeout)
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &Writer{opts: opts, queue: make(chan pending, opts.Queue), done: make(chan struct{}), stop: stop}
	go w.run(ctx)
	return w
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Level is the level of key keyID's calls; a nil Writer records none.
func (w *Writer) Level(keyID string) Level {
	if w == nil {
		return Off
	}
	if l, ok := w.opts.Keys[keyID]; ok {
		return l
	}
	return w.opts.Level
}

// Captures reports whether key keyID's calls keep their request and answer (Full).
func (w *Writer) Captures(keyID string) bool { return w.Level(keyID) == Full }

// Write queues rec, with req and resp as its content when its key's level is Full (they
// are encoded later, off the request path: neither may change after). It never waits: a
// full queue drops the record.
func (w *Writer) Write(rec Record, req *chat.Request, resp *chat.Response) {
	if w.Level(rec.Key) != Full {
		req, resp = nil, nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closing {
		w.opts.Metrics.AuditDropped(metrics.AuditDraining, 1)
		return
	}
	select {
	case w.queue <- pending{rec, req, resp}:
	default:
		w.opts.Metrics.AuditDropped(metrics.AuditQueueFull, 1)
	}
}

// Close writes what is queued, for as long as ctx lasts (what is left then is dropped and
// counted), and stops the Writer. Writes after it are dropped.
func (w *Writer) Close(ctx context.Context) {
	w.mu.Lock()
	if !w.closing {
		w.closing = true
		close(w.queue)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.stop() // the insert under way gives up; the rest is dropped
		<-w.done
	}
}

// run takes the queue in batches until it is closed and empty, and purges what is past
// its retention.
func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	flush := time.NewTicker(w.opts.FlushEvery)
	defer flush.Stop()
	var purge <-chan time.Time
	if w.opts.Retention > 0 {
		t := time.NewTicker(purgeEvery)
		defer t.Stop()
		purge = t.C
		w.purge(ctx)
	}
	batch := make([]Record, 0, w.opts.Batch)
	for {
		select {
		case p, ok := <-w.queue:
			if !ok {
				w.insert(ctx, batch)
				return
			}
			batch = append(batch, w.content(p))
			if len(batch) < w.opts.Batch {
				continue
			}
		case <-flush.C:
		case <-purge:
			w.purge(ctx)
			continue
		}
		w.insert(ctx, batch)
		batch = batch[:0]
	}
}

// content is p's record with its content encoded, each part bounded by
// MaxContentBytes.
func (w *Writer) content(p pending) Record {
	rec := p.rec
	if p.req != nil {
		rec.Request = w.encode(&rec, p.req)
	}
	if p.resp != nil {
		rec.Answer = w.encode(&rec, p.resp)
	}
	return rec
}

// encode is v in the chat model's JSON form, bounded, for rec; nil when it cannot be
// encoded.
func (w *Writer) encode(rec *Record, v any) jsontext.Value {
	b, clipped, err := EncodeContent(v, w.opts.MaxContentBytes)
	if err != nil {
		w.opts.Log.Warn("audit: a call's content could not be encoded", zap.String("request_id", rec.RequestID), zap.Error(err))
		return nil
	}
	rec.Clipped = rec.Clipped || clipped
	return b
}

// insert writes batch to the store, or drops it when the store fails.
func (w *Writer) insert(ctx context.Context, batch []Record) {
	if len(batch) == 0 {
		return
	}
	if ctx.Err() != nil {
		w.opts.Metrics.AuditDropped(metrics.AuditDraining, len(batch))
		return
	}
	ictx, cancel := context.WithTimeout(ctx, w.opts.InsertTimeout)
	err := w.opts.Store.Insert(ictx, batch)
	cancel()
	switch {
	case err == nil:
		w.opts.Metrics.AuditWritten(len(batch))
		if w.failing {
			w.failing = false
			w.opts.Log.Info("audit store writes again")
		}
	case ctx.Err() != nil:
		w.opts.Metrics.AuditDropped(metrics.AuditDraining, len(batch))
	default:
		w.opts.Metrics.AuditDropped(metrics.AuditStoreError, len(batch))
		if !w.failing { // once per outage, not once per batch
			w.failing = true
			w.opts.Log.Warn("audit store write failed: records are dropped until it writes again", zap.Int("records", len(batch)), zap.Error(err))
		}
	}
}

// purge deletes the records past their retention.
func (w *Writer) purge(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := w.opts.Store.Purge(ctx, w.opts.Now().Add(-w.opts.Retention))
	switch {
	case err != nil:
		w.opts.Log.Warn("audit retention: purge failed", zap.Error(err))
	case n > 0:
		w.opts.Log.Info("audit retention: records purged", zap.Int64("records", n))
	}
}
