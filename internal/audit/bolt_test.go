package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// A file another process holds (here another open in this one: the lock is the file's) is
// an error within about a second saying so and what to do, not a wait without end; once it
// is closed the file opens.
func TestBoltInUse(t *testing.T) {
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
