package store

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/redistest"
)

// legitimateReplies are replies the gateway's commands get from Redis 7 over RESP2, as
// one stream: HELLO 2, EXEC of a counter's INCRBY and PEXPIRE, MGET with a miss, GET,
// SET, PING, errors, nils, and the largest value and most keys the bounds allow.
var legitimateReplies = strings.Join([]string{
	"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n" +
		"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
	"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n:5\r\n:1\r\n",
	"*3\r\n$3\r\n500\r\n$-1\r\n$0\r\n\r\n",
	"$-1\r\n", "*-1\r\n", "+PONG\r\n",
	"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	"*2\r\n*1\r\n:1\r\n*0\r\n",
	"$" + fmt.Sprint(MaxValueBytes) + "\r\n" + strings.Repeat("v", MaxValueBytes) + "\r\n",
	"*" + fmt.Sprint(MaxKeys) + "\r\n" + strings.Repeat("$1\r\nx\r\n", MaxKeys),
	"-ERR " + strings.Repeat("e", maxLineBytes-4) + "\r\n",
}, "")

// TestScannerPassesLegitimateReplies: the replies the gateway gets pass whole, however the
// stream is cut into reads: all at once, in reads of an odd size, one byte at a time and
// split at every byte (the short replies).
func TestScannerPassesLegitimateReplies(t *testing.T) {
	t.Parallel()
	var whole scanner
	require.NoError(t, whole.feed([]byte(legitimateReplies)))
	assert.True(t, whole.between(), "back at the start of a reply")

	var chunked scanner
	for rest := []byte(legitimateReplies); len(rest) > 0; {
		n := min(len(rest), 4093)
		require.NoError(t, chunked.feed(rest[:n]))
		rest = rest[n:]
	}
	assert.True(t, chunked.between())

	short := legitimateReplies[:strings.Index(legitimateReplies, "$"+fmt.Sprint(MaxValueBytes))]
	var bytewise scanner
	for i := range len(short) {
		require.NoError(t, bytewise.feed([]byte{short[i]}), "byte %d", i)
	}
	assert.True(t, bytewise.between())
	for i := range len(short) + 1 {
		var s scanner
		require.NoError(t, s.feed([]byte(short[:i])), "split at %d", i)
		require.NoError(t, s.feed([]byte(short[i:])), "split at %d", i)
		assert.True(t, s.between(), "split at %d", i)
	}
}

// between reports whether s is between two replies.
func (s *scanner) between() bool { return s.state == scanType && s.depth == 0 && s.replyBytes == 0 }

// TestScannerRefuses: each reply that breaks a bound is refused at the byte that breaks
// it, before anything after it (the data a header announces) is passed on, however the
// stream is cut.
func TestScannerRefuses(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("*1\r\n", maxDepth+1) + ":1\r\n"
	for _, tt := range []struct{ name, reply, want string }{
		{"a huge array", "*100000000000\r\n", `'*' header over 4096`},
		{"an array over MaxKeys", fmt.Sprintf("*%d\r\n", MaxKeys+1), `'*' header over 4096`},
		{"a huge bulk", "$100000000000\r\n", `'$' header over 4194304`},
		{"a bulk over MaxValueBytes", fmt.Sprintf("$%d\r\n", MaxValueBytes+1), `'$' header over 4194304`},
		{"nesting", deep, "nested over 4 deep"},
		{"a long line", "+" + strings.Repeat("a", maxLineBytes+1), "a line over 4096 bytes"},
		{"a long error", "-" + strings.Repeat("a", maxLineBytes+1) + "\r\n", "a line over 4096 bytes"},
		{"RESP3 map", "%1\r\n", `type byte '%'`},
		{"RESP3 set", "~2\r\n", `type byte '~'`},
		{"RESP3 push", ">3\r\n", `type byte '>'`},
		{"RESP3 attribute", "|1\r\n", `type byte '|'`},
		{"RESP3 verbatim", "=15\r\n", `type byte '='`},
		{"RESP3 blob error", "!21\r\n", `type byte '!'`},
		{"RESP3 null", "_\r\n", `type byte '_'`},
		{"junk after a reply", "+OK\r\nhello", `type byte 'h'`},
		{"a negative count", "*-2\r\n", `'*' header is not a count`},
		{"a count with a sign", "$+5\r\n", `'$' header is not a count`},
		{"an empty count", "$\r\n", `'$' header is not a count`},
		{"a CR alone", "+OK\rX", "CR without LF"},
		{"more after a bulk", "$2\r\nab\r\n%", `type byte '%'`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var whole scanner
			err := whole.feed([]byte(tt.reply))
			require.ErrorIs(t, err, ErrReplyRefused)
			assert.Contains(t, err.Error(), tt.want)
			if len(tt.reply) > 1<<10 {
				return
			}
			var bytewise scanner
			for i := range len(tt.reply) {
				if err = bytewise.feed([]byte{tt.reply[i]}); err != nil {
					break
				}
			}
			require.ErrorIs(t, err, ErrReplyRefused, "byte by byte")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestScannerBoundsAReply: the bulk strings of one reply add up to maxReplyBytes at most,
// and the count starts again with the next reply.
func TestScannerBoundsAReply(t *testing.T) {
	t.Parallel()
	value := []byte("$4194304\r\n" + strings.Repeat("v", MaxValueBytes) + "\r\n")
	var s scanner
	for range 2 {
		require.NoError(t, s.feed([]byte("*17\r\n")))
		for range maxReplyBytes / MaxValueBytes {
			require.NoError(t, s.feed(value))
		}
		require.NoError(t, s.feed([]byte("$0\r\n\r\n")), "%d bytes in all", maxReplyBytes)
		assert.True(t, s.between())
	}
	require.NoError(t, s.feed([]byte("*17\r\n")))
	for range maxReplyBytes / MaxValueBytes {
		require.NoError(t, s.feed(value))
	}
	err := s.feed([]byte("$1\r\n"))
	require.ErrorIs(t, err, ErrReplyRefused)
	assert.Contains(t, err.Error(), "a reply over 67108864 bytes")
}

// FuzzScanner: the scanner never panics, refuses only with ErrReplyRefused, and passes
// the legitimate replies after whatever chunks of them it was fed before.
func FuzzScanner(f *testing.F) {
	f.Add([]byte("*2\r\n$1\r\na\r\n:1\r\n"), uint8(3))
	f.Add([]byte("$-1\r\n+OK\r\n"), uint8(1))
	f.Add([]byte("*100000000000\r\n"), uint8(5))
	f.Add([]byte(legitimateReplies[:300]), uint8(7))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8) {
		var s scanner
		for len(stream) > 0 {
			n := min(len(stream), int(cut)+1)
			if err := s.feed(stream[:n]); err != nil {
				require.ErrorIs(t, err, ErrReplyRefused)
				return
			}
			stream = stream[n:]
		}
		if s.between() {
			require.NoError(t, s.feed([]byte(legitimateReplies[:300])), "a reply starts afresh")
		}
	})
}

// lyingServer answers every command on every connection with reply (until the client
// closes), as a hostile Redis, or one a man in the middle speaks for, would. It returns its
// address.
func lyingServer(t *testing.T, reply string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	conns.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					// One command: *N, then N bulk strings of two lines each.
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					var n int
					fmt.Sscanf(line, "*%d", &n)
					for range 2 * n {
						if _, err := rd.ReadString('\n'); err != nil {
							return
						}
					}
					if _, err := io.WriteString(c, reply); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { lis.Close(); conns.Wait() })
	return lis.Addr().String()
}

// heapGrowth runs f and returns how far the heap in use rose above where it was, at its
// highest, sampled while f runs.
func heapGrowth(f func()) uint64 {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	peak = max(peak, after.HeapAlloc)
	if peak < before.HeapAlloc {
		return 0
	}
	return peak - before.HeapAlloc
}

// TestLyingRedisCannotInflateMemory: a server that answers every command with a header
// announcing 10^11 elements, or a bulk string of 10^11 bytes, gets its connection closed
// at the header: every call fails with ErrReplyRefused, nothing is allocated for what it
// announced, and the Guard's ping finds the store down. (Before the bounds, go-redis
// allocated what the header said: 10^11 elements took 10 GB in 7 s.)
func TestLyingRedisCannotInflateMemory(t *testing.T) {
	// Not parallel: the heap is the process's, and no other test runs beside this one.
	for _, reply := range []string{"*100000000000\r\n", "$100000000000\r\n"} {
		t.Run(strings.TrimSpace(reply), func(t *testing.T) {
			url := "redis://" + lyingServer(t, reply)
			g := newGuarded(t, url, time.Hour) // one ping, at once
			grew := heapGrowth(func() {
				for range 20 {
					_, err := g.shared.Counts(t.Context(), "k1", "k2")
					require.ErrorIs(t, err, ErrReplyRefused)
					assert.Equal(t, "reply refused", errorClass(err))
					_, _, err = g.shared.Get(t.Context(), "k")
					require.ErrorIs(t, err, ErrReplyRefused)
				}
				require.Eventually(t, func() bool { return g.Status() == "redis unreachable" }, 10*time.Second, time.Millisecond)
			})
			assert.Less(t, grew, uint64(64<<20), "heap growth")
			t.Logf("heap growth %d KiB", grew>>10)
			_, err := incr(g, t.Context(), "k", 1, time.Minute)
			require.ErrorIs(t, err, ErrDown, "the ping found it down")
			warnings := g.logs.FilterMessageSnippet("the shared store failed").AllUntimed()
			require.NotEmpty(t, warnings)
			assert.Equal(t, "reply refused", warnings[0].ContextMap()["error"])
		})
	}
}

// TestRedisRefusesWhatItCouldNotReadBack: a value over MaxValueBytes, or a read of more
// than MaxKeys keys, is refused before it is sent; at the bounds, they go through a real
// Redis and back.
func TestRedisRefusesWhatItCouldNotReadBack(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	ctx := t.Context()
	largest := bytes.Repeat([]byte("v"), MaxValueBytes)
	require.NoError(t, r.Put(ctx, "big", largest, time.Minute))
	got, ok, err := r.Get(ctx, "big")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, largest, got)
	require.ErrorIs(t, r.Put(ctx, "bigger", append(largest, 'v'), time.Minute), errValueTooLong)
	assert.Equal(t, ":0", srv.Do("EXISTS", KeyPrefix+"bigger"))

	keys := make([]string, MaxKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	keys[0] = "big"
	many, err := r.GetMany(ctx, keys...)
	require.NoError(t, err)
	assert.Len(t, many, MaxKeys)
	assert.Equal(t, largest, many[0])
	_, err = r.GetMany(ctx, append(keys, "one more")...)
	require.ErrorIs(t, err, errTooManyKeys)
	_, err = r.Counts(ctx, append(keys, "one more")...)
	require.ErrorIs(t, err, errTooManyKeys)
}
