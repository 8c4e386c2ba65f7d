// Package redistest runs a real redis-server for tests: on a free loopback port, without
// persistence, stopped when the test ends. `make test` needs redis-server on PATH (the
// Debian package redis-server; .ci/run installs it): a test that needs one fails without
// it rather than skip, so a green run always means the shared store was tested.
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nirmata/llm-gateway/internal/proctest"
)

// startTimeout bounds the wait for a server to answer PING.
const startTimeout = 10 * time.Second

// Server is one redis-server process; Stop and Start turn it off and on again on the same
// port, for outage tests. Not safe for concurrent use.
type Server struct {
	t        testing.TB
	port     int
	args     []string
	tls      bool
	password string

	proc   *exec.Cmd
	exited chan struct{}
	output *proctest.Output
}

// Start runs a redis-server on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil, false, "")
}

// StartWithPassword runs a redis-server that requires password (requirepass).
func StartWithPassword(t testing.TB, password string) *Server {
	t.Helper()
	return start(t, []string{"--requirepass", password}, false, password)
}

// StartTLS runs a redis-server that speaks TLS only, with a self-signed certificate for
// 127.0.0.1 and localhost, until the test ends. Clients must skip the certificate check
// (rediss://…?skip_verify=true): the certificate is trusted by nobody.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, cert, key)
	return start(t, []string{"--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no"}, true, "")
}

func start(t testing.TB, extra []string, tls bool, password string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not on PATH: the shared-store tests run a real Redis; install the Debian package redis-server (.ci/run does)")
	}
	s := &Server{t: t, args: extra, tls: tls, password: password}
	t.Cleanup(s.Stop)
	// A free port may be taken between finding it and redis-server binding it: try again.
	var err error
	for range 3 {
		if s.port, err = proctest.FreePort(); err != nil {
			t.Fatal(err)
		}
		if err = s.run(); err == nil {
			return s
		}
	}
	t.Fatalf("redis-server did not start: %v", err)
	return nil
}

// URL is the server's redis_url: redis://127.0.0.1:<port> (redis://:<password>@… with a
// password), or rediss:// with skip_verify=true for a TLS server.
func (s *Server) URL() string {
	auth := ""
	if s.password != "" {
		auth = ":" + s.password + "@"
	}
	if s.tls {
		return "rediss://" + auth + s.Addr() + "?skip_verify=true"
	}
	return "redis://" + auth + s.Addr()
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop kills the server, as a crash would, and waits until it has exited: from then on
// its port refuses connections. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.proc == nil {
		return
	}
	_ = s.proc.Process.Kill()
	<-s.exited
	s.proc = nil
}

// Restart starts the server again on its port, empty, and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.run(); err != nil {
		s.t.Fatalf("redis-server did not start again on port %d: %v", s.port, err)
	}
}

// run starts redis-server on s.port and waits until it answers PING, or exits.
func (s *Server) run() error {
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning", "--databases", "1"}
	if s.tls {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port))
	} else {
		args = append(args, "--port", strconv.Itoa(s.port))
	}
	cmd := exec.Command("redis-server", append(args, s.args...)...)
	s.output = &proctest.Output{}
	cmd.Stdout, cmd.Stderr = s.output, s.output
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.proc, s.exited = cmd, exited
	if err := s.awaitPing(); err != nil {
		s.Stop()
		return fmt.Errorf("%w; its output:\n%s", err, s.output.String())
	}
	return nil
}

// awaitPing polls the port with PING until the server answers PONG, exits, or
// startTimeout passes.
func (s *Server) awaitPing() error {
	deadline := time.Now().Add(startTimeout)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		if s.ping() {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("redis-server exited")
		case <-poll.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer PING within %v", startTimeout)
		}
	}
}

// ping sends PING over a new connection and reports whether PONG came back.
func (s *Server) ping() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := dial(ctx, s.Addr(), s.tls)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	// A server with a password answers an unauthenticated PING with NOAUTH: it is up.
	return err == nil && (line == "+PONG\r\n" || strings.HasPrefix(line, "-NOAUTH"))
}

// Do sends one command to the server over a new connection and returns its reply: a
// bulk string's content ("(nil)" for none), else the reply's line (":1", "+OK", "-ERR …"),
// an array's count ("*2"). Enough for tests to look at what the gateway wrote without a
// client of their own.
func (s *Server) Do(args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := dial(ctx, s.Addr(), s.tls)
	if err != nil {
		s.t.Fatalf("redis %v: %v", args[0], err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(conn)
	if s.password != "" {
		if reply := s.send(conn, rd, "AUTH", s.password); reply != "+OK" {
			s.t.Fatalf("redis AUTH: %s", reply)
		}
	}
	return s.send(conn, rd, args...)
}

// send writes one command and reads its reply (see Do).
func (s *Server) send(conn net.Conn, rd *bufio.Reader, args ...string) string {
	s.t.Helper()
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		s.t.Fatalf("redis %v: %v", args[0], err)
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		s.t.Fatalf("redis %v: %v", args[0], err)
	}
	line = line[:len(line)-2]
	if line == "$-1" || line == "_" {
		return "(nil)"
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(line, "$")); err == nil && line[0] == '$' {
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			s.t.Fatalf("redis %v: %v", args[0], err)
		}
		return string(buf[:n])
	}
	return line
}
