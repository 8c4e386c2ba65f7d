package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// A file another process holds (here another open in this one: the lock is the file's) is
// an error within about a second saying so and what to do, not a wait without end; once it
// is closed the file opens.
func TestBoltInUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	first := open(t, path)
	start := time.Now()
	s, err := Open(t.Context(), path)
	if err == nil {
		_ = s.Close()
		t.Fatal("a second Open of a file in use: no error")
	}
	if took := time.Since(start); took > 10*boltLockTimeout {
		t.Errorf("the second Open took %v", took)
	}
	for _, want := range []string{path + " is in use by another process", "a second gateway", "admin API"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path)
}

// A file of a newer schema than this gateway knows, or not a bbolt file at all, is an
// error, and is left as it was.
func TestBoltRefusesUnknownFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	db, err := bbolt.Open(newer, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchemaVersion, []byte("2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), newer); err == nil || !strings.Contains(err.Error(), "version 2, newer than this gateway's 1") {
		t.Errorf("Open of a version 2 file: err = %v", err)
	}

	text := filepath.Join(dir, "notes.txt")
	content := strings.Repeat("not a database\n", 1000)
	if err := os.WriteFile(text, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), text); err == nil || !strings.Contains(err.Error(), "open the audit store "+text) {
		t.Errorf("Open of a text file: err = %v", err)
	}
	if got, _ := os.ReadFile(text); string(got) != content {
		t.Error("Open changed a file that is not a bbolt database")
	}
}

// BenchmarkBoltInsert is the embedded store's cost of a record at the metadata level, in
// batches of the writer's default size into a file that already holds 20,000 records: its
// CPU (the collector's included) and its allocations, each per record. Its request ids are
// the gateway's: time first, so the ids bucket grows at one end as the calls bucket does
// (random ids, a page of the ids bucket written for each record, cost twice as much).
func BenchmarkBoltInsert(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := make([]Record, DefaultBatch)
	n := 0
	insert := func() {
		for i := range batch {
			n++
			batch[i] = Record{Time: time.Now(), RequestID: fmt.Sprintf("%012x%016x", time.Now().UnixMilli(), uint64(n)*0x9e3779b97f4a7c15), Key: "ci",
				Surface: "openai", UserAgent: "OpenAI/Python 1.54.0", ModelRequested: "sonnet",
				ModelServed: "us.anthropic.claude-sonnet-4-20250514-v1:0", Region: "us-east-1", Status: 200, Code: "ok",
				FinishReason: "tool_calls", InputTokens: 1200, OutputTokens: 80, CostUSD: 0.0048, LatencyMs: 812.5,
				ToolCalls: []ToolCall{{Name: "save_policy", ID: "tooluse_1wEkTi5vh3j7ZUwwEa7nI2", Outcome: "valid"}}}
		}
		if err := s.Insert(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	for n < 20000 {
		insert()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start, records := cpuTime(b), n
	for b.Loop() {
		insert()
	}
	records = n - records
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(records), "cpu-µs/record")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(records), "allocs/record")
}

// cpuTime is the CPU time the process has used, all its threads (the collector's too).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSlabKeepsWhatItCut: the slices a slab cuts keep their bytes while it goes on, across
// its buffers and with a slice larger than a buffer, and each has no room to grow into
// what comes after it.
func TestSlabKeepsWhatItCut(t *testing.T) {
	t.Parallel()
	var sl slab
	var cuts, want [][]byte
	for i := range 3000 {
		part := bytes.Repeat([]byte{byte(i)}, i%97+1)
		if i == 1500 {
			part = bytes.Repeat([]byte{'x'}, 3*slabSize)
		}
		sl.begin()
		sl.append(fmt.Sprint(i, ":"))
		if _, err := sl.Write(part); err != nil {
			t.Fatal(err)
		}
		cuts, want = append(cuts, sl.cut()), append(want, append([]byte(fmt.Sprint(i, ":")), part...))
	}
	for i := range cuts {
		if !bytes.Equal(cuts[i], want[i]) {
			t.Fatalf("slice %d changed: %q…", i, cuts[i][:min(len(cuts[i]), 16)])
		}
		if cap(cuts[i]) != len(cuts[i]) {
			t.Fatalf("slice %d has room for %d more bytes", i, cap(cuts[i])-len(cuts[i]))
		}
	}
}
