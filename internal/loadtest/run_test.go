package loadtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
)

// httptest servers, the client's connections and the simulator start goroutines; every test
// must leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run sends n requests at concurrency c to h in format f and returns the result.
func run(t *testing.T, h http.Handler, f Format, expect string, n, c int) *Result {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := NewClient(c, 10*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	cfg := Config{Client: client, URL: srv.URL, Body: []byte(`{}`), Format: f, Concurrency: c, Requests: n}
	if expect != "" {
		cfg.Expect = []byte(expect)
	}
	return NewRunner(cfg).Run(t.Context())
}

// lines answers with the given JSONL lines, flushed one by one.
func lines(ls ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, l := range ls {
			fmt.Fprint(w, l)
			w.(http.Flusher).Flush()
		}
	}
}

func TestJSONLOutcomes(t *testing.T) {
	t.Parallel()
	const (
		content = `{"type":"content","delta":"hi"}` + "\n"
		call    = `{"type":"tool_call","index":0,"delta":{"function":{"arguments":"{}"}}}` + "\n"
		done    = `{"type":"done","finish_reason":"tool_calls","usage":{"total_tokens":3}}` + "\n"
		stop    = `{"type":"done","finish_reason":"stop"}` + "\n"
		errLine = `{"type":"error","error":{"code":"unavailable","message":"upstream"}}` + "\n"
	)
	long := `{"type":"content","delta":"` + strings.Repeat("x", 100<<10) + `"}` + "\n"
	tests := []struct {
		name      string
		h         http.Handler
		want      Kind
		wantLines int64 // per successful stream
	}{
		{"complete", lines(content, call, done), OK, 3},
		{"done without final newline", lines(content, strings.TrimSuffix(done, "\n")), OK, 2},
		{"blank lines are not lines", lines(content, "\n", done), OK, 2},
		{"lines longer than the read buffer", lines(long, long, done), OK, 3},
		{"error line", lines(content, errLine), StreamError, 0},
		{"no done line", lines(content, call), Truncated, 0},
		{"empty body", lines(), Truncated, 0},
		{"cut mid-line", lines(content, `{"type":"do`), Truncated, 0},
		{"done is not the last line", lines(done, content), Truncated, 0},
		{"done without the expected finish", lines(content, stop), Unexpected, 0},
		{"status", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
		}), Status, 0},
		{"chunked body cut before its end", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A done line followed by a dropped connection: the missing terminating chunk
			// means the stream did not end the way the server meant it to.
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(done), done)
			_ = buf.Flush()
		}), Truncated, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tt.h, FormatJSONL, `"finish_reason":"tool_calls"`, 6, 2)
			assert.Equal(t, 6, res.Requests())
			assert.Equal(t, 6, res.Counts[tt.want], "counts %v", res.Counts)
			assert.Equal(t, tt.wantLines*int64(res.Counts[OK]), res.Lines)
			if tt.want == OK {
				assert.Len(t, res.Latencies, 6)
				assert.Len(t, res.FirstLines, 6)
			} else {
				assert.Empty(t, res.Latencies, "failures have no latency")
				assert.Equal(t, 6, res.Errors())
			}
			if tt.want == Status {
				assert.Equal(t, map[int]int{http.StatusTooManyRequests: 6}, res.Statuses)
			}
		})
	}
}

func TestSSEOutcomes(t *testing.T) {
	t.Parallel()
	const (
		role   = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n"
		call   = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]},\"finish_reason\":null}]}\n\n"
		finish = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
		stop   = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
		usage  = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"total_tokens\":9}}\n\n"
		done   = "data: [DONE]\n\n"
		errEv  = "data: {\"error\":{\"message\":\"upstream\"}}\n\n"
	)
	long := "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", 100<<10) + "\"}}]}\n\n"
	tests := []struct {
		name      string
		h         http.Handler
		usage     bool // the stream must report usage
		want      Kind
		wantLines int64 // data lines per successful stream
	}{
		{"complete", lines(role, call, finish, done), false, OK, 4},
		{"complete with usage", lines(role, call, finish, usage, done), true, OK, 5},
		{"usage asked for and missing", lines(role, call, finish, done), true, Malformed, 0},
		{"usage null", lines(role, finish, strings.Replace(usage, `{"total_tokens":9}`, "null", 1), done), true, Malformed, 0},
		{"comments and event names are not data", lines(": keep-alive\n\n", "event: chunk\n"+role, finish, done), false, OK, 3},
		{"no space after data:", lines("data:"+strings.TrimPrefix(finish, "data: "), "data:[DONE]\n\n"), false, OK, 2},
		{"lines longer than the read buffer", lines(long, finish, done), false, OK, 3},
		{"no [DONE]", lines(role, finish), false, Truncated, 0},
		{"[DONE] is not last", lines(role, done, finish), false, Truncated, 0},
		{"error event", lines(role, errEv, done), false, StreamError, 0},
		{"error event, no [DONE]", lines(role, errEv), false, StreamError, 0},
		{"without the expected finish", lines(role, stop, done), false, Unexpected, 0},
		{"no finish reason at all", lines(role, call, done), false, Malformed, 0},
		{"not a chunk object", lines(role, strings.Replace(finish, "chat.completion.chunk", "chat.completion", 1), done), false, Malformed, 0},
		{"no choices", lines(role, "data: {\"object\":\"chat.completion.chunk\",\"finish_reason\":\"tool_calls\"}\n\n", finish, done), false, Malformed, 0},
		{"not JSON", lines(role, "data: tool_calls\n\n", finish, done), false, Malformed, 0},
		{"only [DONE]", lines(done), false, Malformed, 0},
		{"empty body", lines(), false, Truncated, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.h)
			t.Cleanup(srv.Close)
			client := NewClient(2, 10*time.Second)
			t.Cleanup(client.CloseIdleConnections)
			res := NewRunner(Config{Client: client, URL: srv.URL, Body: []byte(`{}`), Format: FormatSSE,
				Expect: []byte(`"finish_reason":"tool_calls"`), Usage: tt.usage, Concurrency: 2, Requests: 4}).Run(t.Context())
			assert.Equal(t, 4, res.Counts[tt.want], "counts %v", res.Counts)
			assert.Equal(t, tt.wantLines*int64(res.Counts[OK]), res.Lines)
		})
	}
}

func TestAnthropicSSEOutcomes(t *testing.T) {
	t.Parallel()
	const (
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}\n\n"
		ping  = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
		delta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n"
		turn  = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n"
		stop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		errEv = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"
	)
	tests := []struct {
		name      string
		h         http.Handler
		want      Kind
		wantLines int64
	}{
		{"complete, a ping among the events", lines(start, block, ping, delta, stop), OK, 5},
		{"no message_stop", lines(start, block, delta), Truncated, 0},
		{"an error event", lines(start, block, errEv), StreamError, 0},
		{"without the expected stop reason", lines(start, turn, stop), Unexpected, 0},
		{"empty body", lines(), Truncated, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tt.h, FormatAnthropicSSE, `"stop_reason":"tool_use"`, 4, 2)
			assert.Equal(t, 4, res.Counts[tt.want], "counts %v", res.Counts)
			assert.Equal(t, tt.wantLines*int64(res.Counts[OK]), res.Lines)
		})
	}
}

func TestUnaryOutcomes(t *testing.T) {
	t.Parallel()
	body := func(s string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, s) }
	}
	res := run(t, body(`{"finish_reason":"tool_calls"}`), FormatUnary, `"finish_reason":"tool_calls"`, 10, 3)
	assert.Equal(t, 10, res.Counts[OK])
	res = run(t, body(`{"finish_reason":"stop"}`), FormatUnary, `"finish_reason":"tool_calls"`, 10, 3)
	assert.Equal(t, 10, res.Counts[Unexpected])
	res = run(t, body(`{"finish_reason":"stop"}`), FormatUnary, "", 10, 3)
	assert.Equal(t, 10, res.Counts[OK], "no expectation checks nothing")
}

func TestOpenAIOutcomes(t *testing.T) {
	t.Parallel()
	const good = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`
	edit := func(old, new string) string {
		require.Contains(t, good, old)
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct {
		name, body string
		want       Kind
	}{
		{"complete", good, OK},
		{"text answer, other members", `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"hi","refusal":null},` +
			`"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"total_tokens":3},"service_tier":"default","provider":"x"}`, OK},
		{"without the expected finish", edit(`"finish_reason":"tool_calls"`, `"finish_reason":"stop"`), Unexpected},
		{"error body", `{"error":{"message":"upstream","type":"server_error","param":null,"code":null}}`, StreamError},
		{"not JSON", `tool_calls`, Malformed},
		{"cut JSON", good[:len(good)-10], Malformed},
		{"not a completion", edit(`"object":"chat.completion"`, `"object":"chat.completion.chunk"`), Malformed},
		{"no choices", edit(`"choices":[{`, `"choices":[],"x":[{`), Malformed},
		{"two choices", edit(`"choices":[{`, `"choices":[{"message":{"role":"assistant"},"finish_reason":"stop"},{`), Malformed},
		{"no role", edit(`"role":"assistant",`, ``), Malformed},
		{"no finish reason", edit(`"finish_reason":"tool_calls"`, `"finish_reason":null`), Malformed},
		{"no usage", edit(`,"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}`, ``), Malformed},
		{"zero usage", edit(`"total_tokens":9`, `"total_tokens":0`), Malformed},
		{"tool call without a name", edit(`"name":"get_weather",`, ``), Malformed},
		{"tool call without an id", edit(`"id":"call_1",`, ``), Malformed},
		{"tool call arguments not JSON", edit(`"{\"city\":\"Paris\"}"`, `"{\"city\":"`), Malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tt.body) }),
				FormatOpenAI, `"finish_reason":"tool_calls"`, 4, 2)
			assert.Equal(t, 4, res.Counts[tt.want], "counts %v", res.Counts)
			assert.Empty(t, res.FirstLines, "a unary answer has no first line")
		})
	}
}

func TestTransportError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	res := NewRunner(Config{URL: url, Format: FormatUnary, Concurrency: 2, Requests: 4}).Run(t.Context())
	assert.Equal(t, 4, res.Counts[Transport])
}

// The Bedrock scenarios against the real simulator: the bodies are valid Converse requests
// that make it call tools, the event-stream reader finds complete streams complete, and the
// simulator's faults come out as the error kinds they are.
func TestBedrockScenariosAgainstSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario string
		fault    string
		want     Kind
	}{
		{"bedrock-unary", "", OK},
		{"bedrock-stream", "", OK},
		{"bedrock-unary", "throttle", Status},
		{"bedrock-stream", "throttle", Status},
		{"bedrock-stream", "truncate,after=5", Truncated},
		{"bedrock-stream", "stream_exception,after=5", StreamError},
	}
	for _, tt := range tests {
		t.Run(tt.scenario+" "+tt.fault, func(t *testing.T) {
			t.Parallel()
			var opts bedrocksim.Options
			if tt.fault != "" {
				f, err := bedrocksim.ParseFault(tt.fault)
				require.NoError(t, err)
				opts.Faults = []bedrocksim.Fault{f}
			}
			sim := bedrocksim.New(opts)
			t.Cleanup(sim.Close)
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			sc, err := Lookup(tt.scenario, DefaultModel)
			require.NoError(t, err)
			client := NewClient(2, 10*time.Second)
			t.Cleanup(client.CloseIdleConnections)
			res := NewRunner(Config{
				Client: client, URL: srv.URL + sc.Path, Body: sc.Body, Format: sc.Format, Expect: sc.Expect,
				Header: http.Header{"Authorization": {"Bearer test"}}, Concurrency: 2, Requests: 4,
			}).Run(t.Context())
			assert.Equal(t, 4, res.Counts[tt.want], "counts %v statuses %v", res.Counts, res.Statuses)
			if tt.want == OK && sc.Format == FormatEventStream {
				// messageStart, 7 text deltas, text stop, 2 × (start, fragments, stop),
				// messageStop, metadata: about 30 events with two tool calls.
				perStream := res.Lines / 4
				assert.GreaterOrEqual(t, perStream, int64(25))
				assert.LessOrEqual(t, perStream, int64(35))
			}
		})
	}
}

// With Requests set, exactly that many are sent, spread over all workers; with Duration,
// requests stop starting once it has passed.
func TestRunCountsAndDuration(t *testing.T) {
	t.Parallel()
	var served, inFlight, maxInFlight atomic.Int64
	// The first request is answered only once a second one has arrived: requests overlap
	// whenever the runner runs them concurrently.
	second := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nth := served.Add(1)
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		switch nth {
		case 1:
			select {
			case <-second:
			case <-r.Context().Done():
			}
		case 2:
			close(second)
		}
		inFlight.Add(-1)
		fmt.Fprint(w, "ok")
	})
	res := run(t, h, FormatUnary, "", 97, 8)
	assert.Equal(t, 97, res.Counts[OK])
	assert.EqualValues(t, 97, served.Load())
	assert.LessOrEqual(t, maxInFlight.Load(), int64(8))
	assert.Greater(t, maxInFlight.Load(), int64(1), "requests ran concurrently")

	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := NewClient(4, 10*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	res = NewRunner(Config{Client: client, URL: srv.URL, Format: FormatUnary, Concurrency: 4, Duration: 100 * time.Millisecond}).Run(t.Context())
	assert.Positive(t, res.Counts[OK])
	assert.GreaterOrEqual(t, res.Elapsed, 100*time.Millisecond)
	assert.Less(t, res.Elapsed, 2*time.Second)
}

// With Rate, requests start on the schedule, not as fast as answers come; a request that
// waits for a free worker counts the wait in its latency.
func TestOpenLoop(t *testing.T) {
	t.Parallel()
	fast := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	srv := httptest.NewServer(fast)
	t.Cleanup(srv.Close)
	client := NewClient(4, 10*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	res := NewRunner(Config{Client: client, URL: srv.URL, Format: FormatUnary, Concurrency: 4, Requests: 21, Rate: 100}).Run(t.Context())
	assert.Equal(t, 21, res.Counts[OK])
	// Lower bounds only: the schedule makes them certain, where an upper bound would
	// measure how busy the machine is.
	assert.GreaterOrEqual(t, res.Elapsed, 200*time.Millisecond, "the 21st request is due 200 ms in")

	// One worker, a request every 10 ms, each taking 30 ms: the schedule falls behind by
	// 20 ms a request, so the last of 8 waited about 140 ms before it could start.
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // 30 ms of work: the scenario's service time, not a synchronisation
		case <-time.After(30 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "ok")
	})
	srv2 := httptest.NewServer(slow)
	t.Cleanup(srv2.Close)
	res = NewRunner(Config{Client: client, URL: srv2.URL, Format: FormatUnary, Concurrency: 1, Requests: 8, Rate: 100}).Run(t.Context())
	require.Len(t, res.Latencies, 8)
	assert.GreaterOrEqual(t, res.Latencies[7], 160*time.Millisecond, "30 ms of work plus 140 ms behind schedule")
}

// Open counts streams between their first line and their end, which the memory run relies
// on to sample RSS while every stream is open.
func TestOpenStreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"type":"content","delta":"a"}`+"\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, `{"type":"done","finish_reason":"stop"}`+"\n")
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := NewClient(5, 10*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	r := NewRunner(Config{Client: client, URL: srv.URL, Format: FormatJSONL, Concurrency: 5, Requests: 5})
	done := make(chan *Result)
	go func() { done <- r.Run(t.Context()) }()
	require.Eventually(t, func() bool { return r.Open() == 5 }, 5*time.Second, time.Millisecond)
	close(release)
	res := <-done
	assert.Equal(t, 5, res.Counts[OK])
	assert.Zero(t, r.Open())
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one value", []time.Duration{7}, 50, 7},
		{"one value p99", []time.Duration{7}, 99, 7},
		{"median of two is the lower", []time.Duration{1, 2}, 50, 1},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p90 of 100", hundred, 90, 90 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"tiny p is the min", hundred, 0.1, time.Millisecond},
		{"p99.9 of 1000 is exact", thousand, 99.9, 999},
		{"p50 of 3", []time.Duration{10, 20, 30}, 50, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Percentile(tt.sorted, tt.p))
		})
	}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, name := range Scenarios {
		sc, err := Lookup(name, DefaultModel)
		require.NoError(t, err, name)
		assert.NotEmpty(t, sc.Body)
		assert.NotEmpty(t, sc.Expect)
	}
	_, err := Lookup("nope", DefaultModel)
	assert.Error(t, err)
	sc, _ := Lookup("bedrock-stream", DefaultModel)
	assert.Equal(t, "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream", sc.Path)

	// The OpenAI scenarios send what the Nirmata ones send, in OpenAI's form; the stream
	// also asks for the usage chunk and is read as requiring it.
	unary, _ := Lookup("unary", DefaultModel)
	openaiUnary, _ := Lookup("openai-unary", DefaultModel)
	assert.Equal(t, string(unary.Body), string(openaiUnary.Body))
	assert.Equal(t, FormatOpenAI, openaiUnary.Format)
	stream, _ := Lookup("stream", DefaultModel)
	openaiStream, _ := Lookup("openai-stream", DefaultModel)
	assert.NotContains(t, string(stream.Body), "stream_options")
	assert.Equal(t, strings.TrimSuffix(string(stream.Body), "}")+`,"stream_options":{"include_usage":true}}`, string(openaiStream.Body))
	assert.True(t, openaiStream.Usage)
	assert.Equal(t, FormatSSE, openaiStream.Format)
	anthropicStream, _ := Lookup("anthropic-stream", DefaultModel)
	assert.Equal(t, FormatAnthropicSSE, anthropicStream.Format)
	assert.Equal(t, "/v1/messages", anthropicStream.Path)
}

func TestProc(t *testing.T) {
	t.Parallel()
	// Burn a little CPU so the counter is past zero even on a fresh process.
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
	}
	cpu, err := CPUTime(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, cpu)
	rss, err := RSS(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, rss, int64(1024), "a Go test binary uses more than 1 MiB")
	_, err = CPUTime(-1)
	assert.Error(t, err)
}

func TestMallocs(t *testing.T) {
	t.Parallel()
	page := "# HELP go_memstats_mallocs_total Total number of heap objects allocated.\n" +
		"# TYPE go_memstats_mallocs_total counter\ngo_memstats_mallocs_total 1.234567e+06\n" +
		"go_memstats_frees_total 1000\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Has("empty") {
			fmt.Fprint(w, "go_goroutines 7\n")
			return
		}
		fmt.Fprint(w, page)
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	n, err := Mallocs(t.Context(), client, srv.URL+"/metrics")
	require.NoError(t, err)
	assert.InDelta(t, 1234567, n, 0.5)
	_, err = Mallocs(t.Context(), client, srv.URL+"/metrics?empty")
	assert.ErrorIs(t, err, errNoMallocs)
	_, err = Mallocs(t.Context(), client, srv.URL+"/nometrics")
	assert.Error(t, err, "a 404 is no number")
}
