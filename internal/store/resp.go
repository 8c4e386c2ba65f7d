package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Bounds on what Redis may send the gateway (docs/PROTOCOL.md 14.3). go-redis allocates
// what a reply's header announces before it reads the data (make([]any, n) for an array,
// make([]byte, n) for a bulk string), so a server that lies, or a man in the middle of a
// redis:// connection, could make it allocate gigabytes with a few bytes. boundedConn
// checks each header as it arrives, before go-redis sees it, against what the gateway's
// own commands can get back, with a wide margin.
const (
	// MaxValueBytes is the largest value the gateway stores, and so reads back: a
	// reasoning-cache entry. Claude's longest answer, 128k tokens of thinking at a few
	// bytes a token with its JSON, is under 1 MiB; a larger entry stays in its replica.
	MaxValueBytes = 4 << 20
	// MaxKeys is the most keys one read asks for (the turns of one request's history
	// its replica lacks, the counters of one key's limits), and so the most elements of a
	// reply; a reply to HELLO has 14, a transaction's two a counter.
	MaxKeys = 4096
	// maxReplyBytes bounds the bulk strings of one reply together: an MGET of many
	// entries. It is the reasoning cache's default max_bytes: a replica could keep no more.
	maxReplyBytes = 64 << 20
	// maxDepth bounds nesting: the gateway's replies are at most two deep (EXEC's array of
	// replies, HELLO's array holding its modules).
	maxDepth = 4
	// maxLineBytes bounds a line (a status, an error, an integer, a header). Redis's own
	// are under 1 KiB: an error quotes at most 128 bytes of a command.
	maxLineBytes = 4096
)

// ErrReplyRefused is the error of a call whose reply broke the bounds above; its
// connection is closed.
var ErrReplyRefused = errors.New("redis reply refused")

// dialer connects to Redis as go-redis's own dialer does, TLS (rediss://) included, but
// bounded by the call's context throughout (go-redis's own TLS handshake is not), and
// returns the connection wrapped in a boundedConn.
func dialer(tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tlsConfig == nil {
			return bound(conn), nil
		}
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return bound(tc), nil
	}
}

// bound wraps conn so that its replies are checked. A connection that is a syscall.Conn
// (TCP) stays one: go-redis peeks at the socket of a pooled connection before it uses it
// again, to drop one the server closed, which reads nothing through Read.
func bound(conn net.Conn) net.Conn {
	b := &boundedConn{Conn: conn}
	if sc, ok := conn.(syscall.Conn); ok {
		return &boundedSyscallConn{b, sc}
	}
	return b
}

// boundedConn passes what Redis sends through a scanner of RESP2 (the protocol the
// gateway asks for) and fails the read, closing the connection, at the first byte that
// breaks a bound. It keeps no copy: each byte is looked at once, as it goes by.
type boundedConn struct {
	net.Conn
	scan scanner
	err  error
}

func (c *boundedConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if serr := c.scan.feed(p[:n]); serr != nil {
		c.err = serr
		_ = c.Conn.Close()
		return 0, serr
	}
	return n, err
}

type boundedSyscallConn struct {
	*boundedConn
	sc syscall.Conn
}

func (c *boundedSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// scanner follows a stream of RESP2 replies (+status, -error, :integer, $bulk, *array)
// one byte at a time, whatever the chunks, and refuses a header over the bounds, nesting
// beyond maxDepth, a line over maxLineBytes and any other type byte (RESP3's among them:
// the gateway asks for RESP2). It checks no more of the syntax than the bounds need:
// go-redis parses the rest. The zero value expects the start of a reply.
type scanner struct {
	state int
	kind  byte  // of the line being read
	line  int   // its length so far
	neg   bool  // a header's "-" (of "-1": none)
	num   int64 // a header's number so far
	bulk  int64 // bytes of a bulk string still to pass, its CRLF included
	// pending holds, for each open array, the elements still to come.
	pending [maxDepth]int64
	depth   int
	// replyBytes adds up the bulk strings of the current top-level reply.
	replyBytes int64
}

// States of a scanner.
const (
	scanType = iota // the next byte is a type byte
	scanLine        // within a line, before its CR
	scanLF          // after a line's CR
	scanBulk        // within a bulk string's data
)

// feed scans p, the next bytes of the stream.
func (s *scanner) feed(p []byte) error {
	for i := 0; i < len(p); i++ {
		switch s.state {
		case scanType:
			switch c := p[i]; c {
			case '+', '-', ':', '$', '*':
				s.kind, s.line, s.neg, s.num, s.state = c, 0, false, 0, scanLine
			default:
				return fmt.Errorf("%w: type byte %q", ErrReplyRefused, c)
			}
		case scanLine:
			c := p[i]
			if c == '\r' {
				s.state = scanLF
				continue
			}
			if s.line++; s.line > maxLineBytes {
				return fmt.Errorf("%w: a line over %d bytes", ErrReplyRefused, maxLineBytes)
			}
			if s.kind == '$' || s.kind == '*' {
				if err := s.digit(c); err != nil {
					return err
				}
			}
		case scanLF:
			if p[i] != '\n' {
				return fmt.Errorf("%w: CR without LF", ErrReplyRefused)
			}
			if err := s.endLine(); err != nil {
				return err
			}
		case scanBulk:
			n := min(int64(len(p)-i), s.bulk)
			s.bulk -= n
			i += int(n) - 1
			if s.bulk == 0 {
				s.state = scanType
				s.element()
			}
		}
	}
	return nil
}

// digit reads one byte of a header's number: "-1" (none) or a count within its bound.
func (s *scanner) digit(c byte) error {
	switch {
	case c == '-' && s.line == 1:
		s.neg = true
	case c >= '0' && c <= '9' && !(s.neg && s.num > 0):
		s.num = s.num*10 + int64(c-'0')
		limit := int64(MaxKeys)
		if s.kind == '$' {
			limit = MaxValueBytes
		}
		if s.num > limit {
			return fmt.Errorf("%w: %q header over %d", ErrReplyRefused, s.kind, limit)
		}
	default:
		return fmt.Errorf("%w: %q header is not a count", ErrReplyRefused, s.kind)
	}
	return nil
}

// endLine acts on a complete line.
func (s *scanner) endLine() error {
	s.state = scanType
	if s.kind != '$' && s.kind != '*' {
		s.element()
		return nil
	}
	if s.neg && s.num != 1 || !s.neg && s.line == 0 {
		return fmt.Errorf("%w: %q header is not a count", ErrReplyRefused, s.kind)
	}
	switch {
	case s.neg || s.num == 0 && s.kind == '*': // none, or an empty array
		s.element()
	case s.kind == '$':
		if s.replyBytes += s.num; s.replyBytes > maxReplyBytes {
			return fmt.Errorf("%w: a reply over %d bytes", ErrReplyRefused, maxReplyBytes)
		}
		s.bulk, s.state = s.num+2, scanBulk
	default: // an array of s.num elements
		if s.depth == maxDepth {
			return fmt.Errorf("%w: nested over %d deep", ErrReplyRefused, maxDepth)
		}
		s.pending[s.depth] = s.num
		s.depth++
	}
	return nil
}

// element counts one complete element in the arrays it closes.
func (s *scanner) element() {
	for s.depth > 0 {
		if s.pending[s.depth-1]--; s.pending[s.depth-1] > 0 {
			return
		}
		s.depth--
	}
	s.replyBytes = 0 // a top-level reply is complete
}
