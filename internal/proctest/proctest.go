// Package proctest holds what the tests that run a real server as a process of its own
// (internal/redistest, internal/pgtest) share: a free loopback port and a bounded,
// locked buffer for the server's output.
package proctest

import (
	"bytes"
	"fmt"
	"net"
	"sync"
)

// FreePort is a loopback TCP port nothing listens on now.
func FreePort() (int, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer lis.Close()
	return lis.Addr().(*net.TCPAddr).Port, nil
}

// Output collects a server's output while a test may read it, up to 64 KiB: enough to
// say why it failed.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Output) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *Output) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
