package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// Tests run in parallel (t.Parallel), each gateway on an upstream of its own (upstreamAt,
// or the embedded simulator), except those that set environment variables (the AWS
// configuration chain, the OTel variables), which run one at a time before them, as
// t.Setenv requires.

// parallelTests is how many tests run at once unless -parallel says otherwise: they mostly
// wait (on timers, sockets, their simulator), so more than the default, GOMAXPROCS, finish
// sooner, and unlike other packages' tests, none times a step tightly.
const parallelTests = 8

// TestMain runs parallelTests tests at once, unless -parallel is given, and empties the AWS
// configuration chain, so that a gateway started without an upstream of its own fails to
// start rather than reach an AWS account this machine is configured for. It checks that no
// test leaves a goroutine behind, but go-redis's dial probe: after failed dials (a Redis
// stopped or never started) its pool probes once a second, and the probe sees that the
// pool was closed only when it wakes.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			os.Unsetenv(name)
		}
	}
	os.Setenv("AWS_CONFIG_FILE", os.DevNull)
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

const (
	testKey   = "test-key-0123456789"
	testModel = "us.anthropic.claude-sonnet-4-20250514-v1:0"
)

// started is a gateway serving for one test.
type started struct {
	gateway.Addrs
	logs *observer.ObservedLogs
}

// start serves the gateway of cfg and opts (an upstream, a clock, counters) until the
// test ends, with every listener on a free loopback port and testKey among its keys.
func start(t testing.TB, cfg config.Config, opts ...gateway.Option) started {
	t.Helper()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeys = append(cfg.APIKeys, testKey)
	core, logs := observer.New(zap.DebugLevel)
	addrs, s := serve(t, cfg, zap.New(core), opts...)
	t.Cleanup(func() { require.NoError(t, s.stop()) })
	return started{Addrs: addrs, logs: logs}
}

// serving is a gateway's Serve running in the background.
type serving struct {
	cancel context.CancelFunc // ends Serve's context, as SIGTERM does
	done   chan struct{}      // closed once Serve has returned
	err    error              // Serve's, once done is closed
}

// stop ends Serve's context and returns Serve's error once it has returned: the drain
// over, the spans exported.
func (s *serving) stop() error {
	s.cancel()
	<-s.done
	return s.err
}

// serve builds the gateway of cfg with gateway.New, as cmd/gateway does, and runs its
// Serve until the test ends.
func serve(t testing.TB, cfg config.Config, log *zap.Logger, opts ...gateway.Option) (gateway.Addrs, *serving) {
	t.Helper()
	g, err := gateway.New(t.Context(), cfg, log, opts...)
	require.NoError(t, err, "the gateway was not built")
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{cancel: cancel, done: make(chan struct{})}
	go func() {
		s.err = g.Serve(ctx)
		close(s.done)
	}()
	t.Cleanup(func() { _ = s.stop() })
	return g.Addrs(), s
}

func defaultConfig(t *testing.T) config.Config {
	cfg, err := config.Load(nil, func(string) string { return "" })
	require.NoError(t, err)
	return cfg
}

// The first turn and the second turn of a tool conversation, exactly as the gollm Nirmata
// client sends them: wrapped tools, tool_choice "auto", then the assistant tool_calls
// message and the tool result in history.
const turn1 = `{
  "messages": [
    {"role": "system", "content": "You are a policy assistant."},
    {"role": "user", "content": "Require pod labels. Use save_policy to store it."}
  ],
  "tools": [
    {"type": "function", "function": {"name": "save_policy", "description": "Save a policy",
      "parameters": {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}}}
  ],
  "tool_choice": "auto"
}`

func turn2(callID, arguments string) string {
	args, _ := json.Marshal(arguments)
	return `{
  "messages": [
    {"role": "system", "content": "You are a policy assistant."},
    {"role": "user", "content": "Require pod labels. Use save_policy to store it."},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "` + callID + `", "type": "function", "function": {"name": "save_policy", "arguments": ` + string(args) + `}}]},
    {"role": "tool", "tool_call_id": "` + callID + `", "content": "{\"saved\":true,\"path\":\"policies/p.yaml\"}"}
  ],
  "tools": [
    {"type": "function", "function": {"name": "save_policy", "description": "Save a policy",
      "parameters": {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}}}
  ],
  "tool_choice": "auto"
}`
}

type chatResponse struct {
	Message   *string `json:"message"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	FinishReason string `json:"finish_reason"`
	Usage        struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Metadata struct {
		Model     string          `json:"model"`
		LatencyMs json.RawMessage `json:"latency_ms"`
		RequestID string          `json:"request_id"`
	} `json:"metadata"`
}

func post(t *testing.T, url, auth, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// restConversation runs the two turns over REST and checks each answer.
func restConversation(t *testing.T, g started) {
	url := "http://" + g.HTTP + "/llm-apps/chat?model=" + testModel + "&provider=bedrock&client_type=NCH"

	resp, body := post(t, url, "NIRMATA-API "+testKey, turn1)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var r1 chatResponse
	require.NoError(t, json.Unmarshal(body, &r1))
	require.NotNil(t, r1.Message, "message is always present")
	assert.Equal(t, "tool_calls", r1.FinishReason)
	require.Len(t, r1.ToolCalls, 1, string(body))
	call := r1.ToolCalls[0]
	assert.NotEmpty(t, call.ID)
	assert.Equal(t, "function", call.Type)
	assert.Equal(t, "save_policy", call.Function.Name)
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(call.Function.Arguments), &args), "arguments is JSON object text")
	assert.IsType(t, "", args["filename"], "arguments built from the schema")
	assert.Positive(t, r1.Usage.TotalTokens)
	assert.Equal(t, r1.Usage.PromptTokens+r1.Usage.CompletionTokens, r1.Usage.TotalTokens)
	assert.Equal(t, testModel, r1.Metadata.Model)
	assert.Equal(t, resp.Header.Get("X-Request-Id"), r1.Metadata.RequestID)
	var latency int64
	assert.NoError(t, json.Unmarshal(r1.Metadata.LatencyMs, &latency), "latency_ms is a number")

	resp, body = post(t, url, "Bearer "+testKey, turn2(call.ID, call.Function.Arguments))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var r2 chatResponse
	require.NoError(t, json.Unmarshal(body, &r2))
	assert.Equal(t, "stop", r2.FinishReason)
	assert.Empty(t, r2.ToolCalls)
	assert.Contains(t, *r2.Message, "policies/p.yaml", "the answer quotes the tool result")
}

func TestRESTToolConversationOnSim(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	restConversation(t, g)

	// /readyz says the upstream is simulated, and so does the startup log; without
	// redis_url the state is the process's own.
	resp, err := http.Get("http://" + g.HTTP + "/readyz")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"status":"ready","upstream":"bedrock-simulator","store":"memory"}`, string(b))
	assert.NotZero(t, g.logs.FilterMessageSnippet("simulator").Len())
}

// TestAdminAddr: --admin-addr serves the probes and the scraper (docs/PROTOCOL.md 7), the
// same answers as on --http-addr, and no API.
func TestAdminAddr(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.AdminAddr = "127.0.0.1:0"
	g := start(t, cfg)
	require.NotEmpty(t, g.Admin)
	restConversation(t, g)
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := get("http://" + g.Admin + path)
		assert.Equal(t, http.StatusOK, code, path)
		_, want := get("http://" + g.HTTP + path)
		assert.JSONEq(t, want, body, path)
	}
	code, metrics := get("http://" + g.Admin + "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, metrics, `gateway_requests_total{client_type="NCH",code="ok",model="`+config.DefaultModel+`",route="chat",transport="rest"} 2`,
		"the calls made on --http-addr")
	resp, err := http.Post("http://"+g.Admin+"/llm-apps/chat", "application/json", strings.NewReader(turn1))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no API on the admin address")
}

// TestRESTToolConversationOnSeparateUpstream reaches a Bedrock look-alike in another
// server exactly as production reaches AWS: the standard AWS variables, resolved once by
// the SDK's configuration chain.
func TestRESTToolConversationOnSeparateUpstream(t *testing.T) {
	var hits atomic.Int32
	sim := bedrocksim.New(bedrocksim.Options{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		assert.True(t, strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDENV/"), "signed with the env credentials")
		sim.ServeHTTP(w, r)
	}))
	defer upstream.Close()
	pointAWSAt(t, upstream.URL)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")

	g := start(t, defaultConfig(t))
	assert.Empty(t, g.Sim)
	restConversation(t, g)
	assert.EqualValues(t, 2, hits.Load())
}

// TestRetriesFromTheEnvironment: the retries the AWS SDK's configuration chain reads
// (AWS_MAX_ATTEMPTS) are the gateway's: with one attempt a throttled call is the client's
// 429 at once, where the SDK's default of three would have retried it into an answer.
func TestRetriesFromTheEnvironment(t *testing.T) {
	sim := recordSim(t, "throttle,times=1")
	pointAWSAt(t, sim.url)
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	g := start(t, defaultConfig(t))
	resp, e, body := chatOnce(t, g, "")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(body))
	assert.Equal(t, "resource_exhausted", e.Code)
	assert.Equal(t, int64(1), sim.Requests())
}

func TestGRPCToolConversation(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := llmgatewayv1.NewChatServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "NIRMATA-API "+testKey)

	params, err := structpb.NewStruct(map[string]any{
		"type": "object", "properties": map[string]any{"filename": map[string]any{"type": "string"}}, "required": []any{"filename"},
	})
	require.NoError(t, err)
	tools := []*llmgatewayv1.Tool{{Function: &llmgatewayv1.FunctionDefinition{Name: "save_policy", Description: "Save a policy", Parameters: params}}}
	req := &llmgatewayv1.ChatRequest{
		Model: testModel,
		Messages: []*llmgatewayv1.Message{
			{Role: llmgatewayv1.Role_ROLE_SYSTEM, Content: "You are a policy assistant."},
			{Role: user, Content: "Require pod labels. Use save_policy to store it."},
		},
		Tools:      tools,
		ToolChoice: &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO}},
	}
	var header metadata.MD
	r1, err := client.Chat(ctx, req, grpc.Header(&header))
	require.NoError(t, err)
	assert.Equal(t, llmgatewayv1.FinishReason_FINISH_REASON_TOOL_CALLS, r1.GetFinishReason())
	require.Len(t, r1.GetToolCalls(), 1)
	call := r1.GetToolCalls()[0]
	assert.Equal(t, "save_policy", call.GetFunction().GetName())
	assert.Equal(t, header.Get("x-request-id"), []string{r1.GetMetadata().GetRequestId()})

	req.Messages = append(req.Messages,
		&llmgatewayv1.Message{Role: llmgatewayv1.Role_ROLE_ASSISTANT, ToolCalls: []*llmgatewayv1.ToolCall{call}},
		&llmgatewayv1.Message{Role: llmgatewayv1.Role_ROLE_TOOL, ToolCallId: call.GetId(), Content: `{"saved":true,"path":"policies/p.yaml"}`})
	r2, err := client.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, llmgatewayv1.FinishReason_FINISH_REASON_STOP, r2.GetFinishReason())
	assert.Contains(t, r2.GetMessage(), "policies/p.yaml")

	// The same request over REST gets the same answer.
	restBody := `{"model":"` + testModel + `","messages":[
		{"role":"system","content":"You are a policy assistant."},
		{"role":"user","content":"Require pod labels. Use save_policy to store it."},
		{"role":"assistant","tool_calls":[{"id":` + strconv.Quote(call.GetId()) + `,"type":"function","function":{"name":"save_policy","arguments":` + strconv.Quote(call.GetFunction().GetArguments()) + `}}]},
		{"role":"tool","tool_call_id":` + strconv.Quote(call.GetId()) + `,"content":"{\"saved\":true,\"path\":\"policies/p.yaml\"}"}],
		"tools":[{"type":"function","function":{"name":"save_policy","description":"Save a policy","parameters":{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}}}],
		"tool_choice":"auto"}`
	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "NIRMATA-API "+testKey, restBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var rest chatResponse
	require.NoError(t, json.Unmarshal(body, &rest))
	assert.Equal(t, r2.GetMessage(), *rest.Message)
	assert.Equal(t, "stop", rest.FinishReason)
	assert.Empty(t, rest.ToolCalls)
}

func TestGRPCAuthHealthAndReflection(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := llmgatewayv1.NewChatServiceClient(conn)
	req := &llmgatewayv1.ChatRequest{Messages: []*llmgatewayv1.Message{{Role: user, Content: "hi"}}}

	for _, auth := range []string{"", "NIRMATA-API wrong", "Basic " + testKey} {
		ctx := t.Context()
		if auth != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
		}
		_, err = client.Chat(ctx, req)
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "authorization %q", auth)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	resp, err := client.Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, llmgatewayv1.FinishReason_FINISH_REASON_STOP, resp.GetFinishReason())
	assert.NotEmpty(t, resp.GetMessage())

	// Capabilities, health and reflection need no key.
	caps, err := client.GetCapabilities(t.Context(), &llmgatewayv1.GetCapabilitiesRequest{})
	require.NoError(t, err)
	assert.True(t, caps.GetToolsSupported())
	assert.Equal(t, []string{"nirmata", "openai", "anthropic", "responses", "grpc"}, caps.GetSurfaces())
	assert.Nil(t, caps.Reasoning, "top-level flags only with a model")
	assert.True(t, caps.GetModels()[0].GetPromptCaching())
	caps, err = client.GetCapabilities(t.Context(), &llmgatewayv1.GetCapabilitiesRequest{Model: "amazon.nova-micro-v1:0"})
	require.NoError(t, err)
	require.NotNil(t, caps.Images)
	assert.False(t, caps.GetImages())
	assert.True(t, caps.GetPromptCaching())

	h, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{Service: "llmgateway.v1.ChatService"})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, h.GetStatus())

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}))
	rr, err := stream.Recv()
	require.NoError(t, err)
	require.NoError(t, stream.CloseSend())
	var names []string
	for _, s := range rr.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	assert.Contains(t, names, "llmgateway.v1.ChatService")
	assert.Contains(t, names, "grpc.health.v1.Health")
}

func TestRESTCapabilitiesAndErrors(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	base := "http://" + g.HTTP

	for _, path := range []string{"/llm-apps/capabilities", "/capabilities"} {
		resp, err := http.Get(base + path + "?model=meta.llama3-1-70b-instruct-v1:0")
		require.NoError(t, err)
		var caps map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&caps))
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, true, caps["tools_supported"], path)
		assert.Equal(t, []any{"function"}, caps["tool_types"], path)
		assert.Equal(t, false, caps["streaming_tools"], "llama 3.1 has no streaming tool use")
		assert.EqualValues(t, 128, caps["max_tools"])
		assert.Equal(t, testModel, caps["default_model"])
		assert.Equal(t, []any{"nirmata", "openai", "anthropic", "responses", "grpc"}, caps["surfaces"])
		// Llama 3.1: no reasoning, caching or structured output; no images; documents left
		// to Bedrock. With ?model= the flags are at the top level too.
		llama := map[string]any{"reasoning": false, "prompt_caching": false, "strict_tools": false, "structured_output": false, "images": false, "documents": true}
		models := caps["models"].([]any)
		for k, v := range llama {
			assert.Equal(t, v, caps[k], k)
			assert.Equal(t, v, models[1].(map[string]any)[k], k)
		}
		assert.Equal(t, true, models[0].(map[string]any)["reasoning"], "the default model, Claude Sonnet 4, reasons")
	}
	resp, err := http.Get(base + "/capabilities")
	require.NoError(t, err)
	var caps map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&caps))
	resp.Body.Close()
	assert.NotContains(t, caps, "reasoning", "top-level flags only with ?model=")

	many := make([]string, 129)
	for i := range many {
		many[i] = `{"name":"t` + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + `_` + string(rune('a'+i/26)) + `"}`
	}
	tests := []struct {
		name, query, auth, body string
		status                  int
		code, msg               string
	}{
		{"no key", "", "", `{"messages":[{"role":"user","content":"hi"}]}`, 401, "unauthenticated", "API key"},
		{"wrong key", "", "NIRMATA-API nope", `{"messages":[{"role":"user","content":"hi"}]}`, 401, "unauthenticated", "API key"},
		{"malformed JSON", "", "NIRMATA-API " + testKey, `{"messages":[`, 400, "invalid_argument", "JSON"},
		{"bad role", "", "NIRMATA-API " + testKey, `{"messages":[{"role":"wizard","content":"hi"}]}`, 400, "invalid_argument", "messages[0].role"},
		{"unsupported provider", "?provider=openai", "NIRMATA-API " + testKey, `{"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_argument", "openai"},
		{"too many tools", "", "NIRMATA-API " + testKey, `{"messages":[{"role":"user","content":"hi"}],"tools":[` + strings.Join(many, ",") + `]}`, 400, "invalid_argument", "tools"},
		{"unknown model", "?model=acme.unknown-model-v1", "NIRMATA-API " + testKey, `{"messages":[{"role":"user","content":"hi"}]}`, 404, "not_found", "model"},
		{"oversize body", "", "NIRMATA-API " + testKey, `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 11<<20) + `"}]}`, 413, "resource_exhausted", "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, base+"/llm-apps/chat"+tt.query, tt.auth, tt.body)
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var e struct {
				Error     string `json:"error"`
				Code      string `json:"code"`
				RequestID string `json:"request_id"`
			}
			require.NoError(t, json.Unmarshal(body, &e), string(body))
			assert.Contains(t, e.Error, tt.msg)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, resp.Header.Get("X-Request-Id"), e.RequestID)
		})
	}

	// Unknown routes and methods answer JSON too.
	resp, body := post(t, base+"/nope", "NIRMATA-API "+testKey, "{}")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(body), `"code":"not_found"`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/llm-apps/chat", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Contains(t, string(body), `"code":"unimplemented"`)

	// Keys and prompt text never reach the log.
	for _, e := range g.logs.AllUntimed() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		assert.NotContains(t, line, testKey)
		assert.NotContains(t, line, `"hi"`)
	}
}

// TestRESTLargeAnswersConcurrently: answers past net/http's 2 KiB buffer carry their
// Content-Length rather than being chunked, and concurrent calls, whose bodies and answers
// share pooled buffers, each get their own answer: the simulator quotes each call's tool
// result back.
func TestRESTLargeAnswersConcurrently(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.DefaultMaxTokens = 0 // answers of up to 24 KB: longer than 4096 tokens
	g := start(t, cfg)
	url := "http://" + g.HTTP + "/llm-apps/chat?model=" + testModel
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				mark := fmt.Sprintf("call-%d-%d-", i, j)
				result := strings.Repeat(mark, 8000/len(mark)*(1+(i+j)%3)) // 8–24 KB
				body := strings.Replace(turn2("call_1", `{"filename":"p.yaml"}`),
					`"content": "{\"saved\":true,\"path\":\"policies/p.yaml\"}"`, `"content": "`+result+`"`, 1)
				resp, b := post(t, url, "NIRMATA-API "+testKey, body)
				if !assert.Equal(t, http.StatusOK, resp.StatusCode, string(b)) {
					return
				}
				assert.Equal(t, int64(len(b)), resp.ContentLength, "Content-Length set")
				assert.Empty(t, resp.TransferEncoding, "not chunked")
				var r chatResponse
				require.NoError(t, json.Unmarshal(b, &r))
				require.NotNil(t, r.Message)
				assert.Contains(t, *r.Message, result, "the answer quotes this call's result")
			}
		})
	}
	wg.Wait()
}
