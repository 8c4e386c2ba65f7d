package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nirmata/llm-gateway/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// eachStore runs test against a new, empty store of each kind: the embedded file and a
// database of a real PostgreSQL server.
func eachStore(t *testing.T, test func(t *testing.T, s Store)) {
	kinds := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"bolt", func(t *testing.T) string { return filepath.Join(t.TempDir(), "audit.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Database(t) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			test(t, open(t, k.dsn(t)))
		})
	}
}

// open opens the store of dsn until the test ends.
func open(t *testing.T, dsn string) Store {
	t.Helper()
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func insert(t *testing.T, s Store, records ...Record) {
	t.Helper()
	if err := s.Insert(t.Context(), records); err != nil {
		t.Fatalf("Insert: %v", err)
	}
}

func call(t *testing.T, s Store, id string) *Record {
	t.Helper()
	r, err := s.Call(t.Context(), id)
	if err != nil {
		t.Fatalf("Call(%q): %v", id, err)
	}
	return r
}

// day1 is the day most records are made on.
var day1 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// full is a record with every field set, content included.
func full(id string, at time.Time) Record {
	return Record{
		Time: at, RequestID: id, Key: "team-a", Surface: "openai", UserAgent: "codex_cli_rs/0.169.0",
		ClientType: "codex", SessionID: "0199a-session", Stream: true,
		ModelRequested: "gpt-5.5", ModelServed: "anthropic.claude-sonnet-4-6", Region: "us-west-2",
		Failovers: 1, Status: 200, Code: "ok", ErrorKind: "", FinishReason: "tool_calls",
		InputTokens: 1200, OutputTokens: 80, CacheReadTokens: 1000, CacheWriteTokens: 150,
		CostUSD: 0.0123, LatencyMs: 812.5,
		ToolCalls: []ToolCall{
			{Name: "read_file", ID: "call_1", Outcome: "valid"},
			{Name: "shell", ID: "call_2", Outcome: "repaired"},
		},
		ToolValidation: "repaired", Repairs: 1, BudgetExhausted: true, DroppedToolCalls: 2,
		ParallelDisabled: true,
		Request:          jsontext.Value(`{"model":"gpt-5.5","messages":[{"role":"user","content":"read \"a.go\"\n"}]}`),
		Answer:           jsontext.Value(`{"finish_reason":"tool_calls","tool_calls":[{"id":"call_1","name":"read_file","arguments":{"path":"a.go"}}]}`),
		Clipped:          true,
	}
}

// Every field of a record comes back as it went in, its time in UTC to the microsecond.
func TestInsertAndCall(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		at := time.Date(2026, 3, 1, 12, 30, 15, 123456789, time.FixedZone("CET", 3600))
		a, b := full("req-a", at), Record{Time: day1, RequestID: "req-b", Key: "team-b", Surface: "grpc", Status: 429, Code: "resource_exhausted", ErrorKind: "rate_limited"}
		insert(t, s, a, b)

		want := a
		want.Time = time.Date(2026, 3, 1, 11, 30, 15, 123456000, time.UTC)
		if diff := cmp.Diff(&want, call(t, s, "req-a")); diff != "" {
			t.Errorf("Call(req-a) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(&b, call(t, s, "req-b")); diff != "" {
			t.Errorf("Call(req-b), a record without content or tool calls (-want +got):\n%s", diff)
		}
		if _, err := s.Call(t.Context(), "req-c"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Call of an unknown id: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Call(t.Context(), ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("Call of the empty id: err = %v, want ErrNotFound", err)
		}
	})
}

// A record whose request id the store holds is ignored, in a later batch (a retried one) or
// in the same batch: the first one kept stays as it was.
func TestInsertIgnoresDuplicates(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		first := full("req-1", day1)
		insert(t, s, first, full("req-2", day1))
		again := full("req-1", day1.Add(time.Hour))
		again.Key, again.InputTokens = "someone-else", 999999
		insert(t, s, again, full("req-2", day1), full("req-3", day1), full("req-3", day1.Add(time.Minute)))

		if diff := cmp.Diff(&first, call(t, s, "req-1")); diff != "" {
			t.Errorf("Call(req-1) after a duplicate (-want +got):\n%s", diff)
		}
		if got := call(t, s, "req-3").Time; !got.Equal(day1) {
			t.Errorf("req-3 inserted twice in one batch: time %v, want the first's %v", got, day1)
		}
		rows, err := s.Usage(t.Context(), UsageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Requests != 3 || rows[0].InputTokens != 3*1200 {
			t.Errorf("Usage after duplicates: %+v, want one row of 3 requests and 3600 input tokens", rows)
		}
	})
}

// Request and Answer come back byte for byte: escapes, non-ASCII text, numbers as written,
// and large values.
func TestContentRoundTrip(t *testing.T) {
	t.Parallel()
	big := `{"text":"` + strings.Repeat(`line \"quoted\" \u00e9 é 😀\n`, 20000) + `"}`
	values := []string{
		`{"a":"\u00e9\/\ud83d\ude00<>&\u0000","b":1.0E+3,"c":[-0,1e-7,12345678901234567890],"d":null,"e":{}}`,
		`"just a string"`,
		`[true,false,null,0.1]`,
		big,
	}
	eachStore(t, func(t *testing.T, s Store) {
		var records []Record
		for i, v := range values {
			r := full(fmt.Sprint("req-", i), day1)
			r.Request, r.Answer = jsontext.Value(v), jsontext.Value(values[len(values)-1-i])
			records = append(records, r)
		}
		insert(t, s, records...)
		for _, want := range records {
			got := call(t, s, want.RequestID)
			if string(got.Request) != string(want.Request) || string(got.Answer) != string(want.Answer) {
				t.Errorf("%s: the content came back changed:\nrequest %.200s\nwant    %.200s\nanswer  %.200s\nwant    %.200s",
					want.RequestID, got.Request, want.Request, got.Answer, want.Answer)
			}
		}
	})
}

// usageRecords are five records on two UTC days, of two keys and two models; each one's
// counts are a different power of two times a constant, so that a total says which records
// it adds up.
func usageRecords() (a, b, c, d, e Record) {
	r := func(id string, at time.Time, key, model string, n int64) Record {
		return Record{Time: at, RequestID: id, Key: key, ModelServed: model, ModelRequested: "alias",
			InputTokens: n, OutputTokens: 2 * n, CacheReadTokens: 3 * n, CacheWriteTokens: 4 * n,
			CostUSD: float64(n) / 8}
	}
	day2 := day1.AddDate(0, 0, 1)
	return r("a", day1.Add(10*time.Hour), "alice", "m1", 1),
		r("b", day2.Add(-time.Microsecond), "bob", "m1", 2),
		r("c", day2, "alice", "m2", 4),
		r("d", day2.Add(12*time.Hour), "alice", "m1", 8),
		// 01:00 on day 2 in UTC+2: 23:00 on day 1 in UTC, the day it counts on.
		r("e", time.Date(2026, 3, 2, 1, 0, 0, 0, time.FixedZone("", 2*3600)), "bob", "m2", 16)
}

// total is the row of key, model and day that adds up records.
func total(key, model, day string, records ...Record) UsageRow {
	u := UsageRow{Key: key, Model: model, Day: day, Requests: int64(len(records))}
	for _, r := range records {
		u.InputTokens += r.InputTokens
		u.OutputTokens += r.OutputTokens
		u.CacheReadTokens += r.CacheReadTokens
		u.CacheWriteTokens += r.CacheWriteTokens
		u.CostUSD += r.CostUSD
	}
	return u
}

// Usage groups by key, model served and UTC day, in any combination, between an inclusive
// From and an exclusive To (either unbounded when zero), ordered by day, key, model.
func TestUsage(t *testing.T) {
	t.Parallel()
	a, b, c, d, e := usageRecords()
	const d1, d2 = "2026-03-01", "2026-03-02"
	tests := []struct {
		name string
		q    UsageQuery
		want []UsageRow
	}{
		{"everything", UsageQuery{}, []UsageRow{total("", "", "", a, b, c, d, e)}},
		{"by key", UsageQuery{GroupBy: []string{ByKey}}, []UsageRow{
			total("alice", "", "", a, c, d), total("bob", "", "", b, e)}},
		{"by model", UsageQuery{GroupBy: []string{ByModel}}, []UsageRow{
			total("", "m1", "", a, b, d), total("", "m2", "", c, e)}},
		{"by day", UsageQuery{GroupBy: []string{ByDay}}, []UsageRow{
			total("", "", d1, a, b, e), total("", "", d2, c, d)}},
		{"by key and model", UsageQuery{GroupBy: []string{ByModel, ByKey}}, []UsageRow{
			total("alice", "m1", "", a, d), total("alice", "m2", "", c),
			total("bob", "m1", "", b), total("bob", "m2", "", e)}},
		{"by key and day", UsageQuery{GroupBy: []string{ByKey, ByDay}}, []UsageRow{
			total("alice", "", d1, a), total("bob", "", d1, b, e), total("alice", "", d2, c, d)}},
		{"by model and day", UsageQuery{GroupBy: []string{ByDay, ByModel}}, []UsageRow{
			total("", "m1", d1, a, b), total("", "m2", d1, e),
			total("", "m1", d2, d), total("", "m2", d2, c)}},
		{"by all three", UsageQuery{GroupBy: []string{ByKey, ByModel, ByDay, ByKey}}, []UsageRow{
			total("alice", "m1", d1, a), total("bob", "m1", d1, b), total("bob", "m2", d1, e),
			total("alice", "m1", d2, d), total("alice", "m2", d2, c)}},
		{"from is inclusive", UsageQuery{From: c.Time}, []UsageRow{total("", "", "", c, d)}},
		{"to is exclusive", UsageQuery{To: c.Time}, []UsageRow{total("", "", "", a, b, e)}},
		{"from and to", UsageQuery{From: b.Time, To: d.Time, GroupBy: []string{ByKey}}, []UsageRow{
			total("alice", "", "", c), total("bob", "", "", b)}},
		{"a bound in another zone", UsageQuery{To: e.Time.Add(time.Microsecond)}, []UsageRow{total("", "", "", a, e)}},
		{"an empty range", UsageQuery{From: d.Time.Add(time.Microsecond)}, nil},
		{"an empty range, grouped", UsageQuery{From: a.Time, To: a.Time, GroupBy: []string{ByKey}}, nil},
	}
	eachStore(t, func(t *testing.T, s Store) {
		insert(t, s, a, b, c, d, e)
		for _, tt := range tests {
			got, err := s.Usage(t.Context(), tt.q)
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.name, diff)
			}
		}
		_, err := s.Usage(t.Context(), UsageQuery{GroupBy: []string{ByKey, "team"}})
		if err == nil || !strings.Contains(err.Error(), `"team" is not a usage grouping`) {
			t.Errorf("Usage grouped by team: err = %v, want one naming the grouping", err)
		}
	})
}

// Purge deletes the records made before a time, and only those, in batches larger than one
// transaction of the embedded store's and one INSERT of PostgreSQL's; a purged id can be
// inserted again.
func TestPurge(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		const old = 2*purgeBatch + 500
		records := make([]Record, old, old+2)
		for i := range records {
			records[i] = Record{Time: day1.Add(time.Duration(i) * time.Millisecond), RequestID: fmt.Sprint("old-", i), InputTokens: 1}
		}
		cut := day1.Add(time.Hour)
		kept := Record{Time: cut, RequestID: "kept", InputTokens: 1000}
		records = append(records, kept, Record{Time: cut.AddDate(0, 0, 1), RequestID: "later", InputTokens: 1000})
		insert(t, s, records...)

		n, err := s.Purge(t.Context(), cut)
		if err != nil || n != old {
			t.Fatalf("Purge = %d, %v; want %d, nil", n, err, old)
		}
		for _, id := range []string{"old-0", fmt.Sprint("old-", old-1)} {
			if _, err := s.Call(t.Context(), id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Call(%s) after the purge: err = %v, want ErrNotFound", id, err)
			}
		}
		call(t, s, "kept") // a record made at the cut is not before it
		rows, err := s.Usage(t.Context(), UsageQuery{})
		if err != nil || len(rows) != 1 || rows[0].Requests != 2 || rows[0].InputTokens != 2000 {
			t.Errorf("Usage after the purge: %+v, %v; want kept and later only", rows, err)
		}
		if n, err := s.Purge(t.Context(), cut); err != nil || n != 0 {
			t.Errorf("a second Purge = %d, %v; want 0, nil", n, err)
		}

		insert(t, s, records[0])
		call(t, s, "old-0")
	})
}

// A batch with a record without a request id is refused whole, naming it.
func TestInsertRefusesMissingID(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		err := s.Insert(t.Context(), []Record{full("req-1", day1), {Time: day1}})
		if err == nil || !strings.Contains(err.Error(), "records[1] has no request_id") {
			t.Fatalf("Insert: err = %v, want one naming records[1]", err)
		}
		if _, err := s.Call(t.Context(), "req-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Call(req-1) of the refused batch: err = %v, want ErrNotFound", err)
		}
	})
}

// A store's records outlive it: opened again, it finds them (and migrates nothing); a
// closed store answers with errors.
func TestReopen(t *testing.T) {
	t.Parallel()
	dsns := map[string]func(t *testing.T) string{
		"bolt":     func(t *testing.T) string { return filepath.Join(t.TempDir(), "audit.db") },
		"postgres": func(t *testing.T) string { return pgtest.Database(t) },
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := dsn(t)
			s, err := Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := full("req-1", day1)
			insert(t, s, want)
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := s.Insert(t.Context(), []Record{full("req-2", day1)}); err == nil {
				t.Error("Insert on a closed store: no error")
			}
			if _, err := s.Call(t.Context(), "req-1"); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("Call on a closed store: err = %v, want the store's", err)
			}

			if diff := cmp.Diff(&want, call(t, open(t, dsn), "req-1")); diff != "" {
				t.Errorf("Call after reopening (-want +got):\n%s", diff)
			}
		})
	}
}

// A cancelled context stops an operation before it starts.
func TestCancelled(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Insert(ctx, []Record{full("req-1", day1)}); !errors.Is(err, context.Canceled) {
			t.Errorf("Insert: err = %v, want context.Canceled", err)
		}
		if _, err := s.Usage(ctx, UsageQuery{}); !errors.Is(err, context.Canceled) {
			t.Errorf("Usage: err = %v, want context.Canceled", err)
		}
		if _, err := s.Purge(ctx, day1); !errors.Is(err, context.Canceled) {
			t.Errorf("Purge: err = %v, want context.Canceled", err)
		}
	})
}
