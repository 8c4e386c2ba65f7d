package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/config"
)

// canary is in every prompt, tool argument and tool result the access-line tests send: no
// log line may hold it.
const canary = "CANARY-5a1d-prompt-text"

// canaryBody is an OpenAI-shaped body (the Nirmata surface reads the same members) naming
// model, whose user message, tool call arguments and tool result hold the canary; extra
// is appended to its members.
func canaryBody(model, extra string) string {
	m := ""
	if model != "" {
		m = `"model":"` + model + `",`
	}
	return `{` + m + `"messages":[
		{"role":"user","content":"` + canary + ` in the user message. Use save_policy."},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"` + canary + `\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"` + canary + ` in the tool result"}],
	"tools":[{"type":"function","function":{"name":"save_policy","parameters":{"type":"object","properties":{"filename":{"type":"string"}}}}}]` + extra + `}`
}

// accessLine is the access line of the call with request id id.
func accessLine(t *testing.T, logs *observer.ObservedLogs, id string) map[string]any {
	t.Helper()
	for _, e := range logs.AllUntimed() {
		if m := e.ContextMap(); (e.Message == "http" || e.Message == "grpc") && m["request_id"] == id {
			return m
		}
	}
	t.Fatalf("no access line for request %s", id)
	return nil
}

// sameReason asserts that reason is what the client was told, clipped to 200 bytes.
func sameReason(t *testing.T, told, reason any) {
	t.Helper()
	r, ok := reason.(string)
	require.True(t, ok, "a reason: %v", reason)
	require.NotEmpty(t, told)
	assert.LessOrEqual(t, len(r), 200+len("…"))
	assert.True(t, strings.HasPrefix(told.(string), strings.TrimSuffix(r, "…")), "reason %q is not what the client was told: %q", r, told)
	if len(told.(string)) <= 200 {
		assert.Equal(t, told, r)
	}
}

// TestAccessLinesSayWhy: the access line of each failed call says why, in the words its
// client got (a 400 refused by the decoder and one by the translator, a 404 for an unknown
// model, a 429 and a 502 from Bedrock, a stream cut by Bedrock, a gRPC refusal); each chat
// line says whether it streamed, carries latency_ms, and names the model the request named
// (an alias: its target, and the alias as request_model). No log line holds the prompt
// text, tool arguments or tool results.
func TestAccessLinesSayWhy(t *testing.T) {
	const (
		throttled  = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
		failing    = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
		streamCuts = "us.anthropic.claude-3-5-sonnet-20241022-v2:0"
	)
	t.Parallel()
	sim := recordSim(t, "throttle,model="+throttled, "internal,model="+failing,
		"stream_exception,exception=modelStreamErrorException,model="+streamCuts)
	cfg := defaultConfig(t)
	cfg.ModelAliases = map[string][]config.Target{"agent": {{ModelID: testModel}}}
	g := start(t, cfg, sim.upstream())

	type rest struct {
		name, path, body string
		status           int
		code             string
		stream           bool
		model, named     string // the access line's model, and request_model ("" for none)
	}
	for _, tt := range []rest{
		{"400 refused by the decoder", "/v1/chat/completions", canaryBody("agent", `,"temperature":"hot"`), 400, "invalid_argument", false, testModel, "agent"},
		{"400 refused by the decoder, a stream", "/v1/chat/completions", canaryBody(testModel, `,"stream":true,"n":"two"`), 400, "invalid_argument", true, testModel, ""},
		{"400 refused by the translator", "/llm-apps/chat?model=agent", canaryBody("", `,"max_tokens":0`), 400, "invalid_argument", false, testModel, "agent"},
		{"404 unknown model", "/v1/chat/completions", canaryBody("gpt-4o", ""), 404, "not_found", false, "gpt-4o", ""},
		{"429 Bedrock throttles", "/llm-apps/chat", canaryBody(throttled, ""), 429, "resource_exhausted", false, throttled, ""},
		{"502 Bedrock fails", "/v1/chat/completions", canaryBody(failing, ""), 502, "unavailable", false, failing, ""},
		{"200", "/llm-apps/chat", canaryBody("agent", ""), 200, "ok", false, testModel, "agent"},
		{"200 stream", "/llm-apps/chat?stream=true", canaryBody(testModel, ""), 200, "ok", true, testModel, ""},
		{"200 stream cut by Bedrock", "/llm-apps/chat?stream=true", canaryBody(streamCuts, ""), 200, "unavailable", true, streamCuts, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, "http://"+g.HTTP+tt.path, "Bearer "+testKey, tt.body)
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			line := accessLine(t, g.logs, resp.Header.Get("X-Request-Id"))
			assert.EqualValues(t, tt.status, line["status"])
			assert.Equal(t, tt.code, line["code"])
			assert.Equal(t, tt.stream, line["stream"])
			assert.Equal(t, tt.model, line["model"])
			if tt.named == "" {
				assert.NotContains(t, line, "request_model")
			} else {
				assert.Equal(t, tt.named, line["request_model"])
			}
			assert.IsType(t, float64(0), line["latency_ms"], "latency_ms, a number")
			assert.NotContains(t, line, "latency", "a latency without its unit")
			if tt.code == "ok" {
				assert.NotContains(t, line, "reason")
				return
			}
			sameReason(t, toldREST(t, body), line["reason"])
		})
	}

	t.Run("gRPC refused by the decoder, a stream", func(t *testing.T) {
		conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
		var header metadata.MD
		stream, err := llmgatewayv1.NewChatServiceClient(conn).ChatStream(ctx, &llmgatewayv1.ChatRequest{Model: "agent",
			Messages:   []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: canary}},
			ToolChoice: &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: 99}}}, grpc.Header(&header))
		require.NoError(t, err)
		_, err = stream.Recv()
		s := status.Convert(err)
		require.Equal(t, "InvalidArgument", s.Code().String(), s.Message())
		line := accessLine(t, g.logs, header.Get("x-request-id")[0])
		assert.Equal(t, "invalid_argument", line["code"])
		assert.Equal(t, true, line["stream"])
		assert.Equal(t, testModel, line["model"])
		assert.Equal(t, "agent", line["request_model"])
		sameReason(t, s.Message(), line["reason"])
	})

	for _, e := range g.logs.AllUntimed() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		assert.NotContains(t, line, "CANARY", "prompt text, a tool argument or a tool result in the log: %s", line)
	}
}

// toldREST is the error message a REST answer gave its client: the Nirmata body's error,
// OpenAI's error.message, or a JSONL stream's last line's error.message.
func toldREST(t *testing.T, body []byte) any {
	t.Helper()
	var last string
	for s := bufio.NewScanner(strings.NewReader(string(body))); s.Scan(); {
		last = s.Text()
	}
	var answer struct {
		Error json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(last), &answer), last)
	var text string
	if json.Unmarshal(answer.Error, &text) == nil {
		return text
	}
	var detail struct{ Message string }
	require.NoError(t, json.Unmarshal(answer.Error, &detail), last)
	return detail.Message
}

// TestMetricsAtZeroFromStartup: right after startup, before any request, /metrics has the
// series a dashboard is built from at zero, for the default model, each alias target and
// each alias of several targets: requests, tokens, prompt-cache tokens, retries, upstream
// errors by Bedrock error code, failovers; and no series for a model nobody configured.
func TestMetricsAtZeroFromStartup(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	const second = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
	cfg.ModelAliases = map[string][]config.Target{"agent": {{ModelID: testModel}, {ModelID: second}}}
	g := start(t, cfg)

	resp, err := http.Get("http://" + g.HTTP + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	for _, series := range []string{
		`gateway_requests_total{client_type="none",code="ok",model="` + testModel + `",route="chat",transport="openai"} 0`,
		`gateway_requests_total{client_type="none",code="ok",model="` + second + `",route="chat_stream",transport="grpc"} 0`,
		`gateway_tokens_total{client_type="none",direction="output",model="` + second + `"} 0`,
		`gateway_cache_read_tokens_total{model="` + testModel + `"} 0`,
		`gateway_cache_write_tokens_total{model="` + second + `"} 0`,
		`gateway_upstream_retries_total{model="` + testModel + `"} 0`,
		`gateway_upstream_errors_total{error_code="ThrottlingException",model="` + testModel + `"} 0`,
		`gateway_upstream_errors_total{error_code="transport",model="` + second + `"} 0`,
		`gateway_failovers_total{alias="agent",reason="ServiceUnavailableException"} 0`,
		`gateway_inflight_requests 0`,
		`gateway_upstream_calls_in_flight 0`,
	} {
		assert.Contains(t, text, series+"\n")
	}
	assert.NotContains(t, text, `model="other"`, "no series of a model nobody named")
	assert.NotContains(t, text, `error_code="ValidationException",model="none"`)
}
