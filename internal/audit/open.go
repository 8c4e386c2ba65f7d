package audit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Open opens the store dsn names (audit_dsn), creating its schema or migrating it to this
// gateway's version:
//   - postgres://… or postgresql://… is PostgreSQL (lib/pq's URL form: user, password, host,
//     port, database, sslmode…), which replicas share;
//   - a file path, sqlite://<path> or file://<path> is the embedded store in that file, for
//     one process, created with mode 0600. The file is a bbolt database, not SQLite:
//     sqlite:// is accepted because it is the scheme the configuration documents for the
//     embedded store (docs/PROTOCOL.md 17). A file another process has open (a second
//     gateway, or a gateway command while the gateway runs) is an error after a second.
//     The file does not shrink when records are purged: their pages are reused.
//
// Errors name a file by its path, and PostgreSQL by its host, never quoting the URL, which
// may hold a password. Both stores keep times to the microsecond, in UTC, and give Request
// and Answer back byte for byte when they are compact JSON (as json.Marshal writes them).
func Open(ctx context.Context, dsn string) (Store, error) {
	scheme, _, _ := strings.Cut(dsn, "://")
	if path, ok, err := FilePath(dsn); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return openBolt(path)
	}
	if scheme == "postgres" || scheme == "postgresql" {
		return openPostgres(ctx, dsn)
	}
	return nil, fmt.Errorf("audit_dsn has the scheme %q: give a file path or a URL of scheme %s", scheme, strings.Join(Schemes, ", "))
}

// FilePath is the file of the embedded store dsn names: ok is false for another store.
func FilePath(dsn string) (path string, ok bool, err error) {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	switch {
	case dsn == "":
		return "", false, fmt.Errorf("audit_dsn is empty: give a file path for the embedded store, or a postgres:// URL")
	case !isURL:
		return dsn, true, nil
	case scheme == "sqlite" || scheme == "file":
		if rest == "" {
			return "", false, fmt.Errorf("audit_dsn %s:// names no file", scheme)
		}
		return rest, true, nil
	}
	return "", false, nil
}

// stamp is a record's time as both stores keep it: UTC, to the microsecond (PostgreSQL's
// precision).
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// dimensions checks a query's groupings and says which it names.
func dimensions(q UsageQuery) (key, model, day bool, err error) {
	for _, g := range q.GroupBy {
		switch g {
		case ByKey:
			key = true
		case ByModel:
			model = true
		case ByDay:
			day = true
		default:
			return false, false, false, fmt.Errorf("%q is not a usage grouping: give key, model or day", g)
		}
	}
	return key, model, day, nil
}

// sortUsage orders rows as Store.Usage promises: by day, key, model.
func sortUsage(rows []UsageRow) {
	slices.SortFunc(rows, func(a, b UsageRow) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), strings.Compare(a.Key, b.Key), strings.Compare(a.Model, b.Model))
	})
}

// checkRecords refuses a batch the stores cannot keep: one with a record without a request
// id, which is its key.
func checkRecords(ctx context.Context, records []Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, r := range records {
		if r.RequestID == "" {
			return fmt.Errorf("records[%d] has no request_id", i)
		}
	}
	return nil
}
