package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// TestHeadScan: what a connection notes of a head, however its bytes arrive, words where
// the limit was reached.
func TestHeadScan(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxHeaderBytes)
	for _, tt := range []struct {
		name, head   string
		method, path string
		says         string
	}{
		{"query parameter", "POST /llm-apps/chat?stream=true&client_type=" + long, "POST", "/llm-apps/chat",
			`request URI too long: the request line and headers are over 64 KiB (the limit was reached in query parameter "client_type")`},
		{"path", "GET /v1/" + long, "GET", "/v1/" + strings.Repeat("x", 256-len("GET /v1/")), "(the limit was reached in the path)"},
		{"header", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + long, "GET", "/v1/models",
			`request headers too large: the request line and headers are over 64 KiB (the limit was reached in header "X-Big")`},
		{"header name cut", "GET / HTTP/1.1\r\n" + long, "GET", "/", `(the limit was reached in header "` + strings.Repeat("x", 64)},
		{"not a request line", "\x16\x03\x01" + long, "", "", "(the limit was reached in the path)"},
	} {
		for _, step := range []int{1, 7, 4096, len(tt.head)} {
			var h headScan
			for rest := tt.head; rest != ""; {
				n := min(step, len(rest))
				h.scan([]byte(rest[:n]))
				rest = rest[n:]
			}
			method, path := h.target()
			assert.Equal(t, tt.method, method, "%s, %d bytes a read", tt.name, step)
			assert.Equal(t, tt.path, path, "%s, %d bytes a read", tt.name, step)
			assert.Contains(t, tooLarge(&h), tt.says, "%s, %d bytes a read", tt.name, step)
		}
	}

	var h headScan
	h.scan([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n{\"messages\":\n"))
	assert.True(t, h.done, "the head ended at its blank line")
	n := h.n
	h.scan([]byte(long))
	assert.Equal(t, n, h.n, "what follows a head is not scanned")
}

// TestHeadConn: net/http's own 431 to the head read is replaced by the surface's JSON; a
// 100 Continue keeps the head (the body that follows is no head), and the next answer
// ends it, so the connection holds no scan until the next head; other writes pass
// unchanged.
func TestHeadConn(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	server, client := net.Pipe()
	defer client.Close()
	c := &headConn{Conn: server, obs: observe.New(zap.NewNop(), m, nil), metrics: m}
	defer c.Close()
	read := func(s string) {
		go func() { _, _ = io.WriteString(client, s) }()
		buf := make([]byte, len(s))
		_, err := io.ReadFull(c, buf)
		require.NoError(t, err)
	}
	write := func(s string) *bufio.Reader {
		go func() { _, _ = io.WriteString(c, s) }()
		return bufio.NewReader(client)
	}
	const goAnswer = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"

	read("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
	br := write("HTTP/1.1 100 Continue\r\n\r\n")
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	_, _ = br.ReadString('\n')
	read("a\nb")
	assert.True(t, c.head.done, "the body after 100 Continue is not scanned as a head")

	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	br = write(ok)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Nil(t, c.head, "an answer ends the head: the connection holds no scan while it streams or waits")

	read("GET /v1/models?q=" + strings.Repeat("q", 100) + " HTTP/1.1\r\nX-Big: yyy")
	resp, err = http.ReadResponse(write(goAnswer), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	assert.True(t, resp.Close, "Connection: close")
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "headers_too_large", e.Error.Code)
	assert.Contains(t, e.Error.Message, `header "X-Big"`)
	assert.NotEmpty(t, resp.Header.Get("X-Request-Id"))

	// With no head being read, even net/http's bytes pass as they are.
	resp, err = http.ReadResponse(write(goAnswer), nil)
	require.NoError(t, err)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
}

// BenchmarkHeadScan is what watching a request's head costs: the head openai-go sends.
func BenchmarkHeadScan(b *testing.B) {
	head := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: OpenAI/Go 1.12.0\r\n" +
		"Content-Length: 1234\r\nAccept: application/json\r\nAuthorization: Bearer test-key-0123456789\r\n" +
		"Content-Type: application/json\r\nX-Stainless-Arch: x64\r\nX-Stainless-Lang: go\r\nX-Stainless-Os: Linux\r\n" +
		"X-Stainless-Package-Version: 1.12.0\r\nX-Stainless-Retry-Count: 0\r\nX-Stainless-Runtime: go\r\n" +
		"X-Stainless-Runtime-Version: go1.26\r\nAccept-Encoding: gzip\r\n\r\n{\"messages\":[]}")
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		var h headScan
		h.scan(head)
	}
}
