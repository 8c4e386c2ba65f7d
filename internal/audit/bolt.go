package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The embedded store is a bbolt file of three buckets:
//   - calls: a record's time key (timeKey) followed by its request id → the record's JSON;
//   - ids: request id → its record's time key, for Call and for ignoring a duplicate;
//   - meta: "schema_version" → the version of this layout, in decimal.
var (
	bucketCalls      = []byte("calls")
	bucketIDs        = []byte("ids")
	bucketMeta       = []byte("meta")
	keySchemaVersion = []byte("schema_version")
)

// boltMigrations are the embedded store's migrations: the one at index i takes the file
// from version i to version i+1.
var boltMigrations = []func(tx *bbolt.Tx) error{
	func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketCalls, bucketIDs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	},
}

// boltLockTimeout bounds the wait for the file's lock, which another process may hold.
const boltLockTimeout = time.Second

// purgeBatch is how many records one of Purge's transactions deletes, so that purging a
// month does not build one transaction of every page it touches.
const purgeBatch = 1000

// boltJSON are the options of a record's JSON in the file: Request and Answer are written
// as they were given (their strings' escapes kept, a duplicate name allowed), so they come
// back byte for byte when compact.
var boltJSON = json.JoinOptions(jsontext.PreserveRawStrings(true), jsontext.AllowDuplicateNames(true))

type boltStore struct{ db *bbolt.DB }

func openBolt(path string) (*boltStore, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: boltLockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("the audit store %s is in use by another process: a second gateway on the same file, or a gateway command while the gateway runs (ask the running gateway through its admin API instead)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open the audit store %s: %w", path, err)
	}
	if err := db.Update(migrateBolt); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("the audit store %s: %w", path, err)
	}
	return &boltStore{db: db}, nil
}

// migrateBolt brings the file to the latest version, in the open transaction.
func migrateBolt(tx *bbolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	version := 0
	if v := meta.Get(keySchemaVersion); v != nil {
		if version, err = strconv.Atoi(string(v)); err != nil {
			return fmt.Errorf("its schema_version %q is not a number", v)
		}
	}
	if version > len(boltMigrations) {
		return fmt.Errorf("its schema is at version %d, newer than this gateway's %d: a newer gateway wrote it", version, len(boltMigrations))
	}
	for _, m := range boltMigrations[version:] {
		if err := m(tx); err != nil {
			return err
		}
	}
	return meta.Put(keySchemaVersion, strconv.AppendInt(nil, int64(len(boltMigrations)), 10))
}

func (s *boltStore) Insert(ctx context.Context, records []Record) error {
	if err := checkRecords(ctx, records); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		calls, ids := tx.Bucket(bucketCalls), tx.Bucket(bucketIDs)
		// Records come nearly in time order, and so do the gateway's request ids (they
		// start with the time), so both buckets are appended to: a page split is left
		// nearly full, not half full (bbolt's default, meant for random keys), so there
		// are fewer pages to write.
		calls.FillPercent, ids.FillPercent = 0.9, 0.9
		// Every value of the batch is cut from a few large buffers, as bbolt keeps values
		// until the commit (it copies keys); the keys are cut there too, as the ids
		// bucket's value t is the calls bucket key's prefix.
		var sl slab
		for _, r := range records {
			sl.begin()
			sl.append(r.RequestID)
			id := sl.cut()
			if ids.Get(id) != nil {
				continue // a retried batch
			}
			r.Time = stamp(r.Time)
			sl.begin()
			sl.b = appendTimeKey(sl.reserve(timeKeyBytes+len(r.RequestID)), r.Time)
			t := sl.cut()
			sl.append(r.RequestID)
			key := sl.cut() // callKey
			sl.begin()
			if err := json.MarshalWrite(&sl, &r, boltJSON); err != nil {
				return fmt.Errorf("record %s: %w", r.RequestID, err)
			}
			if err := calls.Put(key, sl.cut()); err != nil {
				return err
			}
			if err := ids.Put(id, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// slabSize is the size of a slab's buffers: a few dozen records at the metadata level.
const slabSize = 64 << 10

// slab hands out byte slices cut from large buffers, none of them written again once cut:
// begin marks where the next slice starts, appends (and Write, for an encoder) add to it,
// and cut returns it. When a buffer is full, the slice being built moves to a new one, so
// only its own bytes are copied, never what was cut before.
type slab struct {
	b    []byte
	mark int
}

func (s *slab) begin() { s.mark = len(s.b) }

// reserve makes room for n more bytes of the slice being built and returns the buffer.
func (s *slab) reserve(n int) []byte {
	if len(s.b)+n > cap(s.b) {
		building := s.b[s.mark:]
		b := make([]byte, len(building), max(slabSize, 2*(len(building)+n)))
		copy(b, building)
		s.b, s.mark = b, 0
	}
	return s.b
}

func (s *slab) append(p string) { s.b = append(s.reserve(len(p)), p...) }

func (s *slab) Write(p []byte) (int, error) {
	s.b = append(s.reserve(len(p)), p...)
	return len(p), nil
}

// cut returns the slice built since begin, with no room to grow into the buffer.
func (s *slab) cut() []byte { return s.b[s.mark:len(s.b):len(s.b)] }

func (s *boltStore) Call(ctx context.Context, requestID string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var r Record
	err := s.db.View(func(tx *bbolt.Tx) error {
		t := tx.Bucket(bucketIDs).Get([]byte(requestID))
		if t == nil {
			return ErrNotFound
		}
		return json.Unmarshal(tx.Bucket(bucketCalls).Get(callKey(t, requestID)), &r, boltJSON)
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *boltStore) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	byKey, byModel, byDay, err := dimensions(q)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type group struct{ key, model, day string }
	totals := map[group]*UsageRow{}
	err = s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketCalls).Cursor()
		k, v := c.First()
		if !q.From.IsZero() {
			k, v = c.Seek(timeKey(stamp(q.From)))
		}
		var end []byte
		if !q.To.IsZero() {
			end = timeKey(stamp(q.To))
		}
		for ; k != nil && (end == nil || bytes.Compare(k[:8], end) < 0); k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var r Record
			if err := json.Unmarshal(v, &r, boltJSON); err != nil {
				return fmt.Errorf("record %s: %w", k[8:], err)
			}
			var g group
			if byKey {
				g.key = r.Key
			}
			if byModel {
				g.model = r.ModelServed
			}
			if byDay {
				g.day = r.Time.UTC().Format(time.DateOnly)
			}
			row := totals[g]
			if row == nil {
				row = &UsageRow{Key: g.key, Model: g.model, Day: g.day}
				totals[g] = row
			}
			row.Requests++
			row.InputTokens += r.InputTokens
			row.OutputTokens += r.OutputTokens
			row.CacheReadTokens += r.CacheReadTokens
			row.CacheWriteTokens += r.CacheWriteTokens
			row.CostUSD += r.CostUSD
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]UsageRow, 0, len(totals))
	for _, row := range totals {
		rows = append(rows, *row)
	}
	sortUsage(rows)
	return rows, nil
}

func (s *boltStore) Purge(ctx context.Context, before time.Time) (int64, error) {
	end := timeKey(stamp(before))
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		var deleted int
		err := s.db.Update(func(tx *bbolt.Tx) error {
			calls, ids := tx.Bucket(bucketCalls), tx.Bucket(bucketIDs)
			// Keys first, then deletions: a cursor may skip a key after one of its own.
			var keys [][]byte
			c := calls.Cursor()
			for k, _ := c.First(); k != nil && bytes.Compare(k[:8], end) < 0 && len(keys) < purgeBatch; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := calls.Delete(k); err != nil {
					return err
				}
				if err := ids.Delete(k[8:]); err != nil {
					return err
				}
			}
			deleted = len(keys)
			return nil
		})
		n += int64(deleted)
		if err != nil || deleted < purgeBatch {
			return n, err
		}
	}
}

func (s *boltStore) Close() error { return s.db.Close() }

// timeKeyBytes is the size of a time key.
const timeKeyBytes = 8

// timeKey is t as the calls bucket orders it: its Unix nanoseconds, big-endian, with the
// sign bit flipped so that the times before 1970 sort first; clamped to what an int64 of
// nanoseconds holds (the years 1678 to 2262).
func timeKey(t time.Time) []byte { return appendTimeKey(nil, t) }

// appendTimeKey appends t's time key to b.
func appendTimeKey(b []byte, t time.Time) []byte {
	var ns int64
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		ns = math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		ns = math.MaxInt64
	default:
		ns = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(b, uint64(ns)^1<<63)
}

// callKey is the calls bucket's key of a record: its time key, then its request id. A new
// slice: t may be bbolt's memory, which must not be written.
func callKey(t []byte, requestID string) []byte {
	return append(append(make([]byte, 0, len(t)+len(requestID)), t...), requestID...)
}
