package audit

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/lib/pq"
)

// pgMigrations are the PostgreSQL schema's migrations: the one at index i takes the schema
// from version i (audit_schema_version) to version i+1.
var pgMigrations = []string{`
CREATE TABLE audit_calls (
	request_id text PRIMARY KEY,
	time timestamptz NOT NULL,
	key text NOT NULL,
	surface text NOT NULL,
	user_agent text NOT NULL,
	client_type text NOT NULL,
	session_id text NOT NULL,
	stream boolean NOT NULL,
	model_requested text NOT NULL,
	model_served text NOT NULL,
	region text NOT NULL,
	failovers integer NOT NULL,
	status integer NOT NULL,
	code text NOT NULL,
	error_kind text NOT NULL,
	finish_reason text NOT NULL,
	input_tokens bigint NOT NULL,
	output_tokens bigint NOT NULL,
	cache_read_tokens bigint NOT NULL,
	cache_write_tokens bigint NOT NULL,
	cost_usd double precision NOT NULL,
	latency_ms double precision NOT NULL,
	tool_calls jsonb,
	tool_validation text NOT NULL,
	repairs integer NOT NULL,
	budget_exhausted boolean NOT NULL,
	dropped_tool_calls integer NOT NULL,
	parallel_disabled boolean NOT NULL,
	request json,
	answer json,
	clipped boolean NOT NULL
);
CREATE INDEX audit_calls_time ON audit_calls (time);
CREATE INDEX audit_calls_key_time ON audit_calls (key, time);
`}

// pgColumns are audit_calls' columns, in the order of pgFields. request and answer are json,
// not jsonb: json keeps the text as it was given, byte for byte.
const pgColumns = `request_id, time, key, surface, user_agent, client_type, session_id, stream,
	model_requested, model_served, region, failovers, status, code, error_kind, finish_reason,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, latency_ms,
	tool_calls, tool_validation, repairs, budget_exhausted, dropped_tool_calls,
	parallel_disabled, request, answer, clipped`

// pgFields are r's fields in the order of pgColumns: as arguments of an INSERT (database/sql
// passes what they point to) and as the destinations of a SELECT's Scan.
func pgFields(r *Record) []any {
	return []any{&r.RequestID, &r.Time, &r.Key, &r.Surface, &r.UserAgent, &r.ClientType,
		&r.SessionID, &r.Stream, &r.ModelRequested, &r.ModelServed, &r.Region, &r.Failovers,
		&r.Status, &r.Code, &r.ErrorKind, &r.FinishReason, &r.InputTokens, &r.OutputTokens,
		&r.CacheReadTokens, &r.CacheWriteTokens, &r.CostUSD, &r.LatencyMs,
		pgToolCalls{&r.ToolCalls}, &r.ToolValidation, &r.Repairs, &r.BudgetExhausted,
		&r.DroppedToolCalls, &r.ParallelDisabled, (*pgJSON)(&r.Request), (*pgJSON)(&r.Answer),
		&r.Clipped}
}

// pgInsertRows is how many records one INSERT carries: PostgreSQL takes at most 65535
// parameters in a statement.
var pgInsertRows = 65535 / len(pgFields(&Record{}))

type pgStore struct{ db *sql.DB }

func openPostgres(ctx context.Context, dsn string) (*pgStore, error) {
	// Errors name the server, never the URL, which holds the password (url.Parse's
	// errors quote it).
	u, err := url.Parse(dsn)
	if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
		return nil, fmt.Errorf("audit_dsn is not a URL: %w", uerr.Err)
	}
	where := "PostgreSQL at " + u.Host
	connector, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("audit_dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	if err := migratePostgres(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("the audit store in %s: %w", where, err)
	}
	return &pgStore{db: db}, nil
}

// migratePostgres brings the schema to the latest version in one transaction, under a lock
// that lasts as long as it: replicas starting at once against one database migrate one
// after the other, the later ones finding nothing left to do.
func migratePostgres(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('llm-gateway audit schema'))`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS audit_schema_version (version integer NOT NULL)`); err != nil {
		return err
	}
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM audit_schema_version`).Scan(&version); err != nil {
		return err
	}
	if version > len(pgMigrations) {
		return fmt.Errorf("its schema is at version %d, newer than this gateway's %d: a newer gateway migrated it", version, len(pgMigrations))
	}
	if version == len(pgMigrations) {
		return nil
	}
	for i, m := range pgMigrations[version:] {
		if _, err := tx.ExecContext(ctx, m); err != nil {
			return fmt.Errorf("migration to version %d: %w", version+i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM audit_schema_version`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_schema_version (version) VALUES ($1)`, len(pgMigrations)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *pgStore) Insert(ctx context.Context, records []Record) error {
	if err := checkRecords(ctx, records); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for chunk := range slices.Chunk(records, pgInsertRows) {
		var q strings.Builder
		var args []any
		q.WriteString("INSERT INTO audit_calls (" + pgColumns + ") VALUES ")
		for i := range chunk {
			r := chunk[i]
			r.Time = stamp(r.Time)
			fields := pgFields(&r)
			if i > 0 {
				q.WriteString(", ")
			}
			for j := range fields {
				q.WriteString(cond(j == 0, "($", ", $"))
				q.WriteString(strconv.Itoa(len(args) + j + 1))
			}
			q.WriteString(")")
			args = append(args, fields...)
		}
		// A retried batch, or a record written twice, is kept once.
		q.WriteString(" ON CONFLICT (request_id) DO NOTHING")
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *pgStore) Call(ctx context.Context, requestID string) (*Record, error) {
	var r Record
	err := s.db.QueryRowContext(ctx, "SELECT "+pgColumns+" FROM audit_calls WHERE request_id = $1", requestID).Scan(pgFields(&r)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r.Time = r.Time.UTC()
	return &r, nil
}

func (s *pgStore) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	byKey, byModel, byDay, err := dimensions(q)
	if err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if !q.From.IsZero() {
		args = append(args, stamp(q.From))
		where = append(where, "time >= $"+strconv.Itoa(len(args)))
	}
	if !q.To.IsZero() {
		args = append(args, stamp(q.To))
		where = append(where, "time < $"+strconv.Itoa(len(args)))
	}
	// An empty range is no row, as the embedded store has none, even without a grouping.
	query := "SELECT " + cond(byKey, "key", "''") + ", " + cond(byModel, "model_served", "''") + ", " +
		cond(byDay, "to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD')", "''") +
		`, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),
		sum(cache_write_tokens), sum(cost_usd) FROM audit_calls`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " GROUP BY 1, 2, 3 HAVING count(*) > 0"
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var rows []UsageRow
	for rs.Next() {
		var u UsageRow
		if err := rs.Scan(&u.Key, &u.Model, &u.Day, &u.Requests, &u.InputTokens, &u.OutputTokens,
			&u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD); err != nil {
			return nil, err
		}
		rows = append(rows, u)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	sortUsage(rows)
	return rows, nil
}

func (s *pgStore) Purge(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM audit_calls WHERE time < $1", stamp(before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *pgStore) Close() error { return s.db.Close() }

// pgJSON is a json column: NULL for an empty value.
type pgJSON []byte

func (j pgJSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil // text: lib/pq would send a []byte as bytea
}

func (j *pgJSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = bytes.Clone(v)
	case string:
		*j = pgJSON(v)
	default:
		return fmt.Errorf("a json column holds %T", src)
	}
	return nil
}

// pgToolCalls is the jsonb column tool_calls: NULL for none.
type pgToolCalls struct{ calls *[]ToolCall }

func (c pgToolCalls) Value() (driver.Value, error) {
	if len(*c.calls) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(*c.calls)
	return string(b), err
}

func (c pgToolCalls) Scan(src any) error {
	var j pgJSON
	if err := j.Scan(src); err != nil || j == nil {
		*c.calls = nil
		return err
	}
	return json.Unmarshal(j, c.calls)
}

// cond is a when ok, else b.
func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}
