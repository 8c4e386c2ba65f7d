package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig reaches url with static credentials; retries are fast so tests stay quick.
func testConfig(url string, attempts int) aws.Config {
	return aws.Config{
		Region:       "us-west-2",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(url),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.MaxBackoff = time.Millisecond
			})
		},
	}
}

func newTestClient(t *testing.T, h http.Handler, attempts int) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(t.Context(), testConfig(srv.URL, attempts), ClientOptions{Transport: srv.Client().Transport})
	require.NoError(t, err)
	return c
}

var simpleRequest = &ConverseRequest{Messages: []Message{{Role: RoleUser, Content: []ContentBlock{TextBlock("hi <&>")}}}}

func TestConverseSignsAndEscapes(t *testing.T) {
	t.Parallel()
	var gotPath, gotAuth, gotBody string
	var sigErr error
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.EscapedPath(), r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		sigErr = verifySigV4(r, b, aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, "us-west-2")
		_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4}}`)
	}), 1)

	resp, err := c.Converse(t.Context(), "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0", simpleRequest)
	require.NoError(t, err)
	assert.Equal(t, "ok", *resp.Output.Message.Content[0].Text)
	assert.EqualValues(t, 4, resp.Usage.TotalTokens)
	// The SDK escapes ":" and "/" inside the model label; so must we, or signatures differ.
	assert.Equal(t, "/model/arn%3Aaws%3Abedrock%3Aus-west-2%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-20250514-v1%3A0/converse", gotPath)
	assert.True(t, strings.HasPrefix(gotAuth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/"), gotAuth)
	assert.NoError(t, sigErr, "the signature verifies as AWS checks it")
	assert.Contains(t, gotBody, `"text":"hi <&>"`, "no HTML escaping")
}

func TestBearerToken(t *testing.T) {
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-123")
	var gotAuth string
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn"}`)
	}), 1)
	_, err := c.Converse(t.Context(), "m", simpleRequest)
	require.NoError(t, err)
	assert.Equal(t, "Bearer bedrock-api-key-123", gotAuth)
	got, err := c.CheckCredentials(t.Context())
	require.NoError(t, err)
	assert.Equal(t, Credentials{Source: "bedrock_api_key", Provider: "AWS_BEARER_TOKEN_BEDROCK"}, got)

	// SigV4Only (the simulator) never sends the key from the environment.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn"}`)
	}))
	defer srv.Close()
	c, err = NewClient(t.Context(), testConfig(srv.URL, 1), ClientOptions{SigV4Only: true})
	require.NoError(t, err)
	_, err = c.Converse(t.Context(), "m", simpleRequest)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(gotAuth, "AWS4-HMAC-SHA256 "), gotAuth)
	assert.NotContains(t, gotAuth, "bedrock-api-key-123")
}

func TestEndpointFromEnvironment(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://127.0.0.1:4566")
	cfg := testConfig("", 1)
	cfg.BaseEndpoint = nil
	cfg.ConfigSources = nil
	// LoadDefaultConfig is what carries the variable into the config sources.
	loaded, err := awsconfig.LoadDefaultConfig(t.Context(), awsconfig.WithRegion("us-west-2"))
	require.NoError(t, err)
	cfg.ConfigSources = loaded.ConfigSources
	c, err := NewClient(t.Context(), cfg, ClientOptions{})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:4566", c.Endpoint())

	cfg.ConfigSources = nil
	c, err = NewClient(t.Context(), cfg, ClientOptions{})
	require.NoError(t, err)
	assert.Equal(t, "https://bedrock-runtime.us-west-2.amazonaws.com", c.Endpoint())
}

// An endpoint with a query would be called with it, unsigned: refused at startup instead.
func TestEndpointWithAQueryIsRefused(t *testing.T) {
	t.Parallel()
	_, err := NewClient(t.Context(), testConfig("http://127.0.0.1:4566/?token=x", 1), ClientOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a query or fragment is not allowed")
	assert.NotContains(t, err.Error(), "token=x")
}

func TestErrorsAndRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		header    string // X-Amzn-ErrorType
		body      string
		attempts  int
		wantCalls int32
		wantCode  string
		wantMsg   string
	}{
		{"throttling retried", 429, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many requests"}`, 3, 3, CodeThrottling, "Too many requests"},
		{"503 retried", 503, "ServiceUnavailableException", `{"message":"down"}`, 2, 2, CodeServiceUnavailable, "down"},
		{"validation not retried", 400, "ValidationException", `{"message":"A conversation must start with a user message."}`, 3, 1, CodeValidation, "A conversation must start with a user message."},
		{"model not ready not retried", 429, "ModelNotReadyException", `{"message":"warming"}`, 3, 1, CodeModelNotReady, "warming"},
		{"code in body __type", 404, "", `{"__type":"com.amazon.bedrock#ResourceNotFoundException","Message":"no such model"}`, 3, 1, CodeResourceNotFound, "no such model"},
		{"bare status from a proxy", 502, "", `<html>bad gateway</html>`, 1, 1, CodeInternalServer, "<html>bad gateway</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if tt.header != "" {
					w.Header().Set("X-Amzn-ErrorType", tt.header)
				}
				w.Header().Set("X-Amzn-Requestid", "req-1")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}), tt.attempts)
			_, err := c.Converse(t.Context(), "m", simpleRequest)
			var apiErr smithy.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.wantCode, apiErr.ErrorCode())
			assert.Equal(t, tt.wantMsg, apiErr.ErrorMessage())
			assert.Equal(t, tt.wantCalls, calls.Load())
		})
	}
}

func TestThrottlingThenSuccess(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("X-Amzn-ErrorType", CodeThrottling)
			w.WriteHeader(429)
			return
		}
		_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`)
	}), 3)
	resp, err := c.Converse(t.Context(), "m", simpleRequest)
	require.NoError(t, err)
	assert.Equal(t, "end_turn", resp.StopReason)
	assert.EqualValues(t, 2, calls.Load())
}

func TestConnectionRefusedIsTransport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := NewClient(t.Context(), testConfig(url, 1), ClientOptions{})
	require.NoError(t, err)
	_, err = c.Converse(t.Context(), "m", simpleRequest)
	require.ErrorIs(t, err, ErrTransport)
}

// frame encodes one event stream message.
func frame(t *testing.T, msgType, typ string, payload any) []byte {
	t.Helper()
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	msg := eventstream.Message{Payload: b}
	msg.Headers.Set(":message-type", eventstream.StringValue(msgType))
	if msgType == "exception" {
		msg.Headers.Set(":exception-type", eventstream.StringValue(typ))
	} else {
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
	}
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	var buf bytes.Buffer
	require.NoError(t, eventstream.NewEncoder().Encode(&buf, msg))
	return buf.Bytes()
}

func sampleStream(t *testing.T) []byte {
	var b []byte
	b = append(b, frame(t, "event", EventMessageStart, map[string]any{"role": "assistant"})...)
	b = append(b, frame(t, "event", EventContentBlockDelta, map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hi"}})...)
	b = append(b, frame(t, "event", EventContentBlockStart, map[string]any{"contentBlockIndex": 1, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_1", "name": "get"}}})...)
	b = append(b, frame(t, "event", EventContentBlockDelta, map[string]any{"contentBlockIndex": 1, "delta": map[string]any{"toolUse": map[string]any{"input": `{"n":12345678901234567890}`}}})...)
	b = append(b, frame(t, "event", "someFutureEvent", map[string]any{"x": 1})...)
	b = append(b, frame(t, "event", EventMessageStop, map[string]any{"stopReason": "tool_use"})...)
	b = append(b, frame(t, "event", EventMetadata, map[string]any{"usage": map[string]any{"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}})...)
	return b
}

// oneByteReader hands out one byte per Read, like the slowest network.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func readAll(s *EventStream) ([]StreamEvent, error) {
	defer s.Close()
	var out []StreamEvent
	for {
		ev, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func TestEventStreamDecoding(t *testing.T) {
	t.Parallel()
	raw := sampleStream(t)
	check := func(t *testing.T, events []StreamEvent) {
		require.Len(t, events, 7)
		assert.Equal(t, "assistant", events[0].MessageStart.Role)
		assert.Equal(t, "Hi", *events[1].ContentBlockDelta.Delta.Text)
		assert.Equal(t, "tooluse_1", events[2].ContentBlockStart.Start.ToolUse.ToolUseID)
		assert.Equal(t, 1, events[3].ContentBlockDelta.ContentBlockIndex)
		assert.Equal(t, `{"n":12345678901234567890}`, events[3].ContentBlockDelta.Delta.ToolUse.Input)
		assert.Equal(t, "someFutureEvent", events[4].Type, "unknown events pass through")
		assert.Equal(t, "tool_use", events[5].MessageStop.StopReason)
		assert.EqualValues(t, 12, events[6].Metadata.Usage.TotalTokens)
	}
	t.Run("all at once", func(t *testing.T) {
		t.Parallel()
		events, err := readAll(NewEventStream(io.NopCloser(bytes.NewReader(raw))))
		require.NoError(t, err)
		check(t, events)
	})
	t.Run("one byte at a time", func(t *testing.T) {
		t.Parallel()
		events, err := readAll(NewEventStream(io.NopCloser(oneByteReader{bytes.NewReader(raw)})))
		require.NoError(t, err)
		check(t, events)
	})
	t.Run("cut mid-frame", func(t *testing.T) {
		t.Parallel()
		for _, cut := range []int{len(raw) - 1, len(raw) - 20, 5} {
			events, err := readAll(NewEventStream(io.NopCloser(bytes.NewReader(raw[:cut]))))
			require.ErrorIs(t, err, ErrTransport, "cut at %d", cut)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Less(t, len(events), 7)
		}
	})
	t.Run("exception", func(t *testing.T) {
		t.Parallel()
		b := append(frame(t, "event", EventMessageStart, map[string]any{"role": "assistant"}),
			frame(t, "exception", "throttlingException", map[string]any{"message": "slow down"})...)
		events, err := readAll(NewEventStream(io.NopCloser(bytes.NewReader(b))))
		require.Len(t, events, 1)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, CodeThrottling, apiErr.ErrorCode())
		assert.Equal(t, "slow down", apiErr.ErrorMessage())
		assert.Equal(t, http.StatusTooManyRequests, apiErr.HTTPStatusCode())
	})
}

// TestEventStreamStart: Start reads up to the first event after messageStart and Next
// returns what it read, then the rest; an exception before any content is Start's error,
// and Next's after the events before it.
func TestEventStreamStart(t *testing.T) {
	t.Parallel()
	raw := sampleStream(t)
	s := NewEventStream(io.NopCloser(oneByteReader{bytes.NewReader(raw)}))
	require.NoError(t, s.Start())
	assert.True(t, s.Ready(), "the events read ahead are ready")
	events, err := readAll(s)
	require.NoError(t, err)
	require.Len(t, events, 7, "nothing lost or repeated")
	assert.Equal(t, EventMessageStart, events[0].Type)
	assert.Equal(t, "Hi", *events[1].ContentBlockDelta.Delta.Text)

	b := append(frame(t, "event", EventMessageStart, map[string]any{"role": "assistant"}),
		frame(t, "exception", "serviceUnavailableException", map[string]any{"message": "busy"})...)
	s = NewEventStream(io.NopCloser(bytes.NewReader(b)))
	var apiErr *APIError
	require.ErrorAs(t, s.Start(), &apiErr)
	assert.Equal(t, CodeServiceUnavailable, apiErr.Code)
	events, err = readAll(s)
	assert.Len(t, events, 1, "messageStart still comes first")
	assert.ErrorAs(t, err, &apiErr)

	// A stream that starts with content stops reading there.
	b = append(frame(t, "event", EventContentBlockDelta, map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "Hi"}}),
		frame(t, "exception", "throttlingException", map[string]any{"message": "later"})...)
	s = NewEventStream(io.NopCloser(bytes.NewReader(b)))
	require.NoError(t, s.Start(), "the exception comes after content: not Start's")
	events, err = readAll(s)
	assert.Len(t, events, 1)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, CodeThrottling, apiErr.Code)
}

func TestConverseStreamOverHTTP(t *testing.T) {
	t.Parallel()
	raw := sampleStream(t)
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "application/vnd.amazon.eventstream", r.Header.Get("Accept"))
		assert.True(t, strings.HasSuffix(r.URL.Path, "/converse-stream"))
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		_, _ = w.Write(raw)
	}), 1)
	s, err := c.ConverseStream(t.Context(), "m", simpleRequest)
	require.NoError(t, err)
	events, err := readAll(s)
	require.NoError(t, err)
	assert.Len(t, events, 7)
}

func TestNormalizeCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ThrottlingException": "ThrottlingException",
		"throttlingException": "ThrottlingException",
		"ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/": "ValidationException",
		"com.amazon.bedrock#AccessDeniedException":                                 "AccessDeniedException",
		"": "",
	} {
		assert.Equal(t, want, NormalizeCode(in), in)
	}
}

// TestFinishedStreamsReuseTheConnection: closing a stream after its last event keeps the
// connection for the next call (dialling one per stream costs CPU and memory).
func TestFinishedStreamsReuseTheConnection(t *testing.T) {
	t.Parallel()
	raw := sampleStream(t)
	lastRead := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		_, _ = w.Write(raw)
		w.(http.Flusher).Flush() // chunked, as Bedrock streams
		// The body's end comes after the client has read the last event, in its own
		// segment, as from a real upstream: a client that closes at the last event has not
		// seen it yet.
		select {
		case <-lastRead:
		case <-r.Context().Done():
		}
	}))
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := NewClient(t.Context(), testConfig(srv.URL, 1), ClientOptions{})
	require.NoError(t, err)
	for range 5 {
		s, err := c.ConverseStream(t.Context(), "m", simpleRequest)
		require.NoError(t, err)
		for {
			ev, err := s.Next()
			require.NoError(t, err)
			if ev.Type == EventMetadata {
				break // stop reading at the last event, as the gateway does
			}
		}
		lastRead <- struct{}{}
		require.NoError(t, s.Close())
	}
	assert.EqualValues(t, 1, conns.Load(), "one connection for five streams")
}

// TestCloseDoesNotWaitForAnUpstreamThatHoldsTheBody: after the last event Close reads the
// body's end, but not for longer than drainWait, even with no deadline on the call.
func TestCloseDoesNotWaitForAnUpstreamThatHoldsTheBody(t *testing.T) {
	t.Parallel()
	raw := sampleStream(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		_, _ = w.Write(raw)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // never end the body
	}))
	defer srv.Close()
	c, err := NewClient(t.Context(), testConfig(srv.URL, 1), ClientOptions{})
	require.NoError(t, err)
	s, err := c.ConverseStream(context.Background(), "m", simpleRequest)
	require.NoError(t, err)
	for {
		ev, err := s.Next()
		require.NoError(t, err)
		if ev.Type == EventMetadata {
			break
		}
	}
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), drainWait+time.Second)
}

// TestOpenStreamsDropTheirRequests: the transport keeps a stream's request until the stream
// is closed; what it reaches of the request must not hold the encoded body once Bedrock has
// answered. Open streams with 64 KiB prompts would otherwise keep 64 KiB each.
func TestOpenStreamsDropTheirRequests(t *testing.T) {
	const streams, prompt = 40, 64 << 10
	raw := sampleStream(t)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		assert.EqualValues(t, len(b), r.ContentLength)
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		_, _ = w.Write(raw[:100]) // the stream has begun
		w.(http.Flusher).Flush()
		<-hold
	}))
	defer srv.Close()
	defer close(hold)
	c, err := NewClient(t.Context(), testConfig(srv.URL, 1), ClientOptions{})
	require.NoError(t, err)
	req := &ConverseRequest{Messages: []Message{{Role: RoleUser, Content: []ContentBlock{TextBlock(strings.Repeat("x", prompt))}}}}

	heap := func() int64 { // signed: a GC that empties pools may leave less than before
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := heap()
	var open []*EventStream
	for range streams {
		s, err := c.ConverseStream(t.Context(), "m", req)
		require.NoError(t, err)
		open = append(open, s)
	}
	// The transport writes the request and then lets its body go a moment later, on its own
	// goroutine. An open stream holds about 33 KiB without it (the connection's buffers and
	// the stream's 4 KiB read buffer among them); with it, 64 KiB more.
	require.Eventually(t, func() bool { return (heap()-before)/streams < prompt*3/4 }, 10*time.Second, 20*time.Millisecond,
		"each open stream holds its request")
	for _, s := range open {
		_ = s.Close()
	}
}

// TestClockSkewIsCorrected: AWS refuses signatures more than 5 minutes from its clock. A
// host whose clock is 10 minutes behind gets its first call refused, learns the skew from
// the answer's Date header, and the retry, signed at the corrected time, passes; later
// calls are signed right the first time.
func TestClockSkewIsCorrected(t *testing.T) {
	t.Parallel()
	const ahead = 10 * time.Minute
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		now := time.Now().Add(ahead)
		w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
		signed, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		require.NoError(t, err)
		if d := now.Sub(signed); d > 5*time.Minute || d < -5*time.Minute {
			w.Header().Set("X-Amzn-ErrorType", CodeInvalidSignature)
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"message":"Signature expired"}`)
			return
		}
		_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`)
	}))
	defer srv.Close()
	c, err := NewClient(t.Context(), testConfig(srv.URL, 3), ClientOptions{})
	require.NoError(t, err)

	_, err = c.Converse(t.Context(), "m", simpleRequest)
	require.NoError(t, err)
	assert.EqualValues(t, 2, calls.Load(), "refused once, then signed at AWS's time")
	_, err = c.Converse(t.Context(), "m", simpleRequest)
	require.NoError(t, err)
	assert.EqualValues(t, 3, calls.Load(), "the next call is signed right at once")
}

// TestSignatureRefusalWithoutSkewIsNotRetried: a refused signature on a clock that is
// right is the credentials' fault; signing again would not help.
func TestSignatureRefusalWithoutSkewIsNotRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("X-Amzn-ErrorType", CodeInvalidSignature)
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"The request signature we calculated does not match"}`)
	}))
	defer srv.Close()
	c, err := NewClient(t.Context(), testConfig(srv.URL, 3), ClientOptions{})
	require.NoError(t, err)
	_, err = c.Converse(t.Context(), "m", simpleRequest)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, CodeInvalidSignature, apiErr.Code)
	assert.EqualValues(t, 1, calls.Load())
}
