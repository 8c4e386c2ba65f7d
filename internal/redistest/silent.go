package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Silent is a server that accepts connections and reads what they send, and never
// answers: a Redis that hangs (a full machine, a network partition that lets SYNs
// through, a lying middlebox). It counts the connections made to it.
type Silent struct {
	t   testing.TB
	lis net.Listener
	// accepted carries the remote address of each connection accepted, in order.
	accepted chan string
}

// StartSilent runs a Silent server on a free loopback port until the test ends.
func StartSilent(t testing.TB) *Silent {
	t.Helper()
	s := &Silent{t: t, accepted: make(chan string, 1024)}
	s.lis = serve(t, func(c net.Conn) {
		s.accepted <- c.RemoteAddr().String()
		_, _ = io.Copy(io.Discard, c)
	})
	return s
}

// serve accepts connections on a free loopback port until the test ends, each handled by
// handle in a goroutine of its own; at the end the connections are closed and their
// handlers waited for.
func serve(t testing.TB, handle func(net.Conn)) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	conns.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			conns.Go(func() { handle(c) })
		}
	})
	t.Cleanup(func() {
		_ = lis.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return lis
}

// URL is the server's redis_url.
func (s *Silent) URL() string { return "redis://" + s.lis.Addr().String() }

// Connections returns how many connections were made to the server since the last call:
// it dials one of its own and waits until the server accepted it, so every connection
// made before it has been accepted, and counted (a listener accepts in order).
func (s *Silent) Connections() int {
	s.t.Helper()
	c, err := net.Dial("tcp", s.lis.Addr().String())
	if err != nil {
		s.t.Fatalf("dial the silent server: %v", err)
	}
	defer c.Close()
	mark := c.LocalAddr().String()
	timeout := time.After(startTimeout)
	for n := 0; ; n++ {
		select {
		case addr := <-s.accepted:
			if addr == mark {
				return n
			}
		case <-timeout:
			s.t.Fatalf("the silent server did not accept a connection within %v", startTimeout)
		}
	}
}

// StartPingOnly runs a server that answers PING and nothing else (HELLO with an error, as
// a Redis before 6 does): a proxy that answers health checks itself while the Redis
// behind it hangs. It serves until the test ends.
func StartPingOnly(t testing.TB) (url string) {
	t.Helper()
	return "redis://" + serve(t, answerPings).Addr().String()
}

// answerPings reads commands (RESP arrays of bulk strings) from c until it closes,
// answering PING and HELLO only.
func answerPings(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		switch strings.ToUpper(cmd) {
		case "PING":
			_, _ = c.Write([]byte("+PONG\r\n"))
		case "HELLO":
			_, _ = c.Write([]byte("-ERR unknown command 'HELLO'\r\n"))
		}
	}
}

// readCommand reads one command and returns its name.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return "", fmt.Errorf("not a command: %q", line)
	}
	var name string
	for i := range n {
		head, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if err != nil || size < 0 {
			return "", fmt.Errorf("not a bulk string: %q", head)
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(r, arg); err != nil {
			return "", err
		}
		if i == 0 {
			name = string(arg[:size])
		}
	}
	return name, nil
}
