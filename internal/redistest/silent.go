package redistest

import (
	"io"
	"net"
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &Silent{t: t, lis: lis, accepted: make(chan string, 1024)}
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
			s.accepted <- c.RemoteAddr().String()
			conns.Go(func() { _, _ = io.Copy(io.Discard, c) })
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
	return s
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
