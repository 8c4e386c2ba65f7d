package audit

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nirmata/llm-gateway/internal/pgtest"
)

// query runs a query on dsn's database directly and returns its first column, one string
// a row.
func query(t *testing.T, dsn, q string) []string {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// Replicas starting at once against one new database all open it, and the schema is made
// once: version 1, the table with its typed columns and its indexes.
func TestPostgresConcurrentMigration(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	const replicas = 8
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			s, err := Open(t.Context(), dsn)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Open at once: %v", err)
	}
	if got := query(t, dsn, "SELECT version::text FROM audit_schema_version"); len(got) != 1 || got[0] != "1" {
		t.Errorf("audit_schema_version holds %q, want one row of 1", got)
	}
	got := query(t, dsn, "SELECT indexdef FROM pg_indexes WHERE tablename = 'audit_calls' ORDER BY indexname")
	want := []string{"(key, \"time\")", "(request_id)", "(\"time\")"}
	if len(got) != len(want) {
		t.Fatalf("indexes of audit_calls: %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasSuffix(got[i], want[i]) {
			t.Errorf("index %d of audit_calls: %s, want one on %s", i, got[i], want[i])
		}
	}

	// The tool calls are jsonb, which SQL can look into.
	s := open(t, dsn)
	insert(t, s, full("req-1", day1))
	if got := query(t, dsn, "SELECT tool_calls->1->>'name' FROM audit_calls"); len(got) != 1 || got[0] != "shell" {
		t.Errorf("the second tool call's name in SQL: %q, want shell", got)
	}
}

// A database whose schema a newer gateway migrated is an error.
func TestPostgresNewerSchema(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	if err := open(t, dsn).Close(); err != nil {
		t.Fatal(err)
	}
	query(t, dsn, "UPDATE audit_schema_version SET version = 2 RETURNING ''")
	if _, err := Open(t.Context(), dsn); err == nil || !strings.Contains(err.Error(), "version 2, newer than this gateway's 1") {
		t.Errorf("Open of a version 2 schema: err = %v", err)
	}
}

// With the server down, Open and Insert fail at once, naming the server and not the URL's
// password; once it is back the same store writes again, and has kept what it had.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	srv.CreateDatabase("audit")
	dsn := "postgres://postgres:s3cret@" + srv.Addr() + "/audit?sslmode=disable"
	s := open(t, dsn)
	insert(t, s, full("before", day1))

	srv.Stop()
	// A deadline the failures must not need: they come from the refused connection.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.Insert(ctx, []Record{full("during", day1)}); err == nil || ctx.Err() != nil {
		t.Errorf("Insert with the server down: err = %v, the context's %v; want an error of its own", err, ctx.Err())
	}
	_, err := Open(ctx, dsn)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Open with the server down: err = %v, the context's %v; want an error of its own", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), srv.Addr()) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open with the server down: %v; want it to name %s and not the password", err, srv.Addr())
	}

	srv.Restart()
	insert(t, s, full("after", day1))
	call(t, s, "before")
	if _, err := s.Call(t.Context(), "during"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Call(during): err = %v, want ErrNotFound", err)
	}
}
