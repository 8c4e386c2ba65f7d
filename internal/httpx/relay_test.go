package httpx_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/coretest"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// silent opens streams whose body the test writes: nothing arrives until it does.
type silent struct {
	coretest.Panicking
	body *io.PipeReader
}

func (s silent) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	return bedrock.NewEventStream(s.body), nil
}

// TestServePings: while the upstream is silent, the stream gets a ping whenever nothing
// was written for PingEvery, each a whole frame; once the stream ends, its last frame is
// the failure and no ping follows it.
func TestServePings(t *testing.T) {
	t.Parallel()
	body, upstream := io.Pipe()
	svc := coretest.Service(silent{body: body}, zap.NewNop())
	obs := observe.New(zap.NewNop(), metrics.New(), nil)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		call := obs.Begin("rest", "chat_stream", r.Method, r.URL.Path)
		_ = httpx.Serve(w, r, call, time.Minute, func() (*core.Stream, httpx.Frames, error) {
			st, _, err := svc.Stream(r.Context(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}})
			return st, httpx.Frames{ContentType: "text/event-stream",
				Event:     func(dst []byte, _ *chat.Event) []byte { return append(dst, "event\n"...) },
				Error:     func(dst []byte, _ fault.Failure) []byte { return append(dst, "error\n"...) },
				Ping:      func(dst []byte) []byte { return append(dst, "ping\n"...) },
				PingEvery: time.Millisecond}, err
		})
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	for range 3 { // the upstream is silent: pings, one after the other
		line, err := lines.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ping\n", line)
	}
	require.NoError(t, upstream.Close()) // the upstream ends without an answer
	var rest []string
	for {
		line, err := lines.ReadString('\n')
		if err == io.EOF {
			assert.Empty(t, line, "whole frames only")
			break
		}
		require.NoError(t, err)
		rest = append(rest, line)
	}
	<-done
	require.NotEmpty(t, rest)
	assert.Equal(t, "error\n", rest[len(rest)-1], "the failure is the last frame")
	for _, line := range rest[:len(rest)-1] {
		assert.Equal(t, "ping\n", line, "pings until the failure, nothing else")
	}
}
