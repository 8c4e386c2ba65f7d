// Package pgtest runs a real PostgreSQL server for tests: a copy of a cluster initdb made
// once (see template) in a temporary directory, postgres on a free loopback port with fsync
// off, stopped when the test (or, for the shared server, the test binary) ends. `make test`
// needs PostgreSQL's programs (the Debian package postgresql, which puts them in
// /usr/lib/postgresql/<version>/bin; .ci/run installs it): a test that needs one fails
// without them rather than skip, so a green run always means the PostgreSQL store was
// tested. PostgreSQL refuses to run as root, so a test run as root (CI) runs it as the user
// postgres, which the Debian package creates.
package pgtest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/nirmata/llm-gateway/internal/proctest"
)

// startTimeout bounds initdb, the template's copy, and the wait for a server to accept
// connections.
const startTimeout = 30 * time.Second

// Server is one PostgreSQL server with a database cluster of its own; Stop and Restart turn
// it off and on again on the same port and data, for outage tests. Not safe for concurrent
// use.
type Server struct {
	t    testing.TB
	bin  string // the directory of initdb and postgres
	dir  string // the cluster's data directory, also the directory of its socket
	port int
	cred *syscall.Credential // whom to run as; nil for the current user

	proc   *exec.Cmd
	exited chan struct{}
	output *proctest.Output
}

// Start runs a PostgreSQL server of the test's own until the test ends: for tests that stop
// it. Others share one with Database, which starts faster.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := newServer()
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.remove)
	return s
}

// DSN is the URL of database name on the server, as the user postgres, without TLS.
func (s *Server) DSN(name string) string {
	return "postgres://postgres@" + s.Addr() + "/" + name + "?sslmode=disable"
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// CreateDatabase creates an empty database and returns its DSN.
func (s *Server) CreateDatabase(name string) string {
	s.t.Helper()
	dsn, err := s.createDatabase(name)
	if err != nil {
		s.t.Fatal(err)
	}
	return dsn
}

func (s *Server) createDatabase(name string) (string, error) {
	db, err := sql.Open("postgres", s.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	// FILE_COPY copies the template's files rather than logging each block: faster for a
	// small database (measured: 110 to 290 ms a database, against 230 to 550).
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)+" STRATEGY FILE_COPY"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}

// Stop shuts the server down at once (PostgreSQL's immediate shutdown, as a crash would:
// connections are cut, nothing is checkpointed) and waits until it has exited: from then on
// its port refuses connections. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.proc == nil {
		return
	}
	_ = s.proc.Process.Signal(syscall.SIGQUIT)
	<-s.exited
	s.proc = nil
}

// Restart starts the server again on its port and data, and waits until it accepts
// connections.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.run(); err != nil {
		s.t.Fatalf("postgres did not start again on port %d: %v", s.port, err)
	}
}

var shared struct {
	sync.Mutex
	running bool // Main is running the tests
	server  *Server
	err     error
	n       int // databases created
}

// Main runs a test binary's tests (call it from TestMain: os.Exit(pgtest.Main(m))) and then
// stops the server Database started, if any, and removes its data.
func Main(m *testing.M) int {
	shared.Lock()
	shared.running = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.server != nil {
		shared.server.remove()
	}
	return code
}

// Database creates an empty database on the test binary's shared server, started on the
// first call, and returns its DSN. The binary's TestMain must run its tests through Main.
func Database(t testing.TB) string {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.running {
		t.Fatal("pgtest.Database needs the test binary's TestMain to run its tests through pgtest.Main, which stops the shared server")
	}
	if shared.server == nil && shared.err == nil {
		shared.server, shared.err = newServer()
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	// Under the lock: CREATE DATABASE copies template1, and refuses while another copies it.
	shared.n++
	dsn, err := shared.server.createDatabase("test" + strconv.Itoa(shared.n))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// newServer copies the template cluster into a new temporary directory and starts a server
// on it.
func newServer() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if s.cred, err = credential(); err != nil {
		return nil, err
	}
	tmpl, err := template(bin, s.cred)
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: PostgreSQL's own user must be able to reach the data directory through
	// its parents, and the shared server outlives the test that starts it.
	top, err := mkdirs(s.cred)
	if err != nil {
		return nil, err
	}
	s.dir = filepath.Join(top, "data")
	if err := runAs(s.cred, "cp", "-a", tmpl+"/.", s.dir); err != nil {
		_ = os.RemoveAll(top)
		return nil, fmt.Errorf("copying the template cluster: %w", err)
	}
	// A free port may be taken between finding it and postgres binding it: try again.
	for range 3 {
		if s.port, err = proctest.FreePort(); err != nil {
			break
		}
		if err = s.run(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(top)
	return nil, fmt.Errorf("postgres did not start: %w", err)
}

// template is the data directory of a cluster made by initdb for servers of bin run as cred,
// with the superuser postgres and no passwords, which each server copies rather than run
// initdb itself: initdb takes about two seconds of CPU, a copy a tenth of that. It is kept in
// the temporary directory under a name its inputs decide, for the test binaries of this run
// and the next (a build cache of sorts), made whole before it is renamed into place, so a
// binary that finds it finds it complete, and two that make it at once both succeed.
func template(bin string, cred *syscall.Credential) (string, error) {
	args := []string{"-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"}
	key := sha256.Sum256([]byte(strings.Join(append([]string{bin, strconv.Itoa(os.Geteuid())}, args...), "\x00")))
	final := filepath.Join(os.TempDir(), "pgtest-template-"+hex.EncodeToString(key[:8]))
	data := filepath.Join(final, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return data, nil
	}
	top, err := mkdirs(cred)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(top) // what is left of it when another binary's template came first
	if err := runAs(cred, filepath.Join(bin, "initdb"), append([]string{"-D", filepath.Join(top, "data")}, args...)...); err != nil {
		return "", err
	}
	if err := os.Rename(top, final); err != nil {
		if _, statErr := os.Stat(filepath.Join(data, "PG_VERSION")); statErr != nil {
			return "", fmt.Errorf("keeping the template cluster: %w", err)
		}
	}
	return data, nil
}

// mkdirs makes a new temporary directory with an empty data directory in it, owned by the
// user the server runs as (cred; nil for the current user) and reachable by it.
func mkdirs(cred *syscall.Credential) (string, error) {
	top, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", err
	}
	data := filepath.Join(top, "data")
	err = os.Mkdir(data, 0o700)
	if err == nil && cred != nil {
		if err = os.Chmod(top, 0o711); err == nil {
			err = os.Chown(data, int(cred.Uid), int(cred.Gid))
		}
	}
	if err != nil {
		_ = os.RemoveAll(top)
		return "", err
	}
	return top, nil
}

// runAs runs a program to its end as the user cred names (nil for the current user), within
// startTimeout; its error carries the program's output.
func runAs(cred *syscall.Credential, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v; its output:\n%s", filepath.Base(name), err, out)
	}
	return nil
}

// run starts postgres on s.port and waits until it accepts connections, or exits.
func (s *Server) run() error {
	// -F: no fsync, which a test's data never needs (a stopped server's writes are in the
	// page cache all the same). The time zone is not UTC, as many servers' is not, so that
	// code that depends on the session's zone fails its tests.
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dir, "-k", s.dir,
		"-p", strconv.Itoa(s.port), "-c", "listen_addresses=127.0.0.1", "-F",
		"-c", "TimeZone=America/Los_Angeles")
	// Pdeathsig: a test binary killed by its timeout does not leave a server behind (its
	// backends exit when their postmaster dies).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	s.output = &proctest.Output{}
	cmd.Stdout, cmd.Stderr = s.output, s.output
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.proc, s.exited = cmd, exited
	if err := s.awaitReady(); err != nil {
		s.Stop()
		return fmt.Errorf("%w; its output:\n%s", err, s.output.String())
	}
	return nil
}

// awaitReady pings the server until it answers, exits, or startTimeout passes.
func (s *Server) awaitReady() error {
	db, err := sql.Open("postgres", s.DSN("postgres")+"&connect_timeout=1")
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(startTimeout)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited")
		case <-poll.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within %v: %v", startTimeout, err)
		}
	}
}

// remove stops the server and removes its data.
func (s *Server) remove() {
	s.Stop()
	_ = os.RemoveAll(filepath.Dir(s.dir))
}

// binDir is the directory holding initdb and postgres: the one on PATH, else Debian's
// /usr/lib/postgresql/<version>/bin of the highest version.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "postgres"))
		return err != nil
	})
	if len(dirs) == 0 {
		return "", fmt.Errorf("PostgreSQL's initdb is neither on PATH nor in /usr/lib/postgresql/*/bin: the PostgreSQL store's tests run a real server; install the Debian package postgresql (.ci/run does)")
	}
	version := func(d string) int {
		n, _ := strconv.Atoi(strings.Split(filepath.Base(filepath.Dir(d)), ".")[0])
		return n
	}
	return slices.MaxFunc(dirs, func(a, b string) int { return cmp.Compare(version(a), version(b)) }), nil
}

// credential is the user postgres runs as when the tests run as root, which PostgreSQL
// refuses: the user postgres the Debian package creates. Nil otherwise (the current user).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("the tests run as root, which PostgreSQL refuses, and there is no user postgres to run it as (the Debian package postgresql creates it): %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
