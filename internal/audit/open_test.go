package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nirmata/llm-gateway/internal/pgtest"
)

// A file path, sqlite://<path> and file://<path> each open the embedded store in that file,
// readable by its owner only.
func TestOpenEmbedded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct{ dsn, file string }{
		{filepath.Join(dir, "plain.db"), filepath.Join(dir, "plain.db")},
		{"sqlite://" + filepath.Join(dir, "sqlite.db"), filepath.Join(dir, "sqlite.db")},
		{"file://" + filepath.Join(dir, "file.db"), filepath.Join(dir, "file.db")},
	} {
		s := open(t, tt.dsn)
		insert(t, s, full("req-1", day1))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(tt.file)
		if err != nil {
			t.Errorf("%s: %v", tt.dsn, err)
			continue
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: the file's mode is %v, want 0600 (it may hold prompts)", tt.dsn, fi.Mode().Perm())
		}
		call(t, open(t, tt.file), "req-1")
	}
}

// A DSN Open cannot use is an error naming what is wrong.
func TestOpenBadDSN(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"":                                      "audit_dsn is empty",
		"mysql://db/audit":                      `audit_dsn has the scheme "mysql"`,
		"sqlite://":                             "audit_dsn sqlite:// names no file",
		"file://":                               "audit_dsn file:// names no file",
		"postgres://u:s3cret@%zz/audit":         `audit_dsn is not a URL: invalid URL escape "%zz"`,
		"postgres://db/audit?sslmode=sometimes": "audit_dsn: pq:",
	} {
		s, err := Open(t.Context(), dsn)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q): no error", dsn)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): %v, want it to say %q and not the password", dsn, err, want)
		}
	}
}

// Every scheme the configuration lets through (Schemes) is one Open takes.
func TestOpenSchemes(t *testing.T) {
	t.Parallel()
	pg := pgtest.Database(t)
	for _, scheme := range Schemes {
		dsn := scheme + "://" + filepath.Join(t.TempDir(), "audit.db")
		if strings.HasPrefix(scheme, "postgres") {
			dsn = scheme + strings.TrimPrefix(pg, "postgres")
		}
		insert(t, open(t, dsn), full("req-1", day1))
	}
}
