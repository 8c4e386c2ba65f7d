package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/buildinfo"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// OpenTelemetry traces end to end (docs/PROTOCOL.md 14.6): a real gateway on the simulator
// exports over OTLP to a receiver in the test, which decodes what it gets as a collector
// does. The gateway's stop flushes its spans, so a test reads them once Run has returned.

// otlpReceiver keeps the OTLP trace export requests it receives, and their bytes as they
// came, for a search of everything exported.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	// endpoint is what OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT names.
	endpoint string
	mu       sync.Mutex
	raw      [][]byte
	reqs     []*coltracepb.ExportTraceServiceRequest
}

func (r *otlpReceiver) keep(raw []byte, req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw = append(r.raw, raw)
	r.reqs = append(r.reqs, req)
}

// newHTTPReceiver is an OTLP/HTTP receiver (binary protobuf on /v1/traces).
func newHTTPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// No idle connection outlives the test: the exporter's client is shared.
		w.Header().Set("Connection", "close")
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		raw, err := io.ReadAll(req.Body)
		in := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(raw, in)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.keep(raw, in)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.endpoint = srv.URL
	return r
}

// newGRPCReceiver is an OTLP/gRPC receiver.
func newGRPCReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(lis) //nolint:errcheck // Stop ends it
	t.Cleanup(srv.Stop)
	r.endpoint = "http://" + lis.Addr().String() // http: without TLS, as the exporter reads it
	return r
}

// Export implements [coltracepb.TraceServiceServer].
func (r *otlpReceiver) Export(_ context.Context, in *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	raw, err := proto.Marshal(in)
	if err != nil {
		return nil, err
	}
	r.keep(raw, in)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// span is one exported span with its resource's attributes.
type span struct {
	*tracepb.Span
	resource []*commonpb.KeyValue
}

func (r *otlpReceiver) spans() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, req := range r.reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					out = append(out, span{Span: s, resource: rs.GetResource().GetAttributes()})
				}
			}
		}
	}
	return out
}

// exported is every byte the receiver got.
func (r *otlpReceiver) exported() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Join(r.raw, nil)
}

func attrOf(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

func (s span) attr(key string) *commonpb.AnyValue { return attrOf(s.GetAttributes(), key) }

func (s span) str(key string) string { return s.attr(key).GetStringValue() }

func (s span) int(key string) int64 { return s.attr(key).GetIntValue() }

func (s span) strs(key string) []string {
	var out []string
	for _, v := range s.attr(key).GetArrayValue().GetValues() {
		out = append(out, v.GetStringValue())
	}
	return out
}

// serverSpan is the server span of the call with that request id.
func serverSpan(t *testing.T, spans []span, requestID string) span {
	t.Helper()
	for _, s := range spans {
		if s.GetKind() == tracepb.Span_SPAN_KIND_SERVER && s.str("gateway.request_id") == requestID {
			return s
		}
	}
	require.Failf(t, "no server span", "request id %s", requestID)
	return span{}
}

// children are the spans whose parent is s.
func children(spans []span, s span) []span {
	var out []span
	for _, c := range spans {
		if bytes.Equal(c.GetParentSpanId(), s.GetSpanId()) && bytes.Equal(c.GetTraceId(), s.GetTraceId()) {
			out = append(out, c)
		}
	}
	return out
}

// otelVariables are the variables that decide whether and where the gateway exports, and
// the ones that change what it exports; each test sets the ones it needs over empty ones,
// whatever the machine's environment holds.
var otelVariables = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_COMPRESSION",
	"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"}

func setOTelEnv(t *testing.T, env map[string]string) {
	for _, k := range otelVariables {
		t.Setenv(k, env[k])
	}
}

// startTraced serves the gateway on the simulator; stop ends its Serve and returns once
// Serve has, which is once the spans are exported.
func startTraced(t *testing.T, cfg config.Config, opts ...gateway.Option) (g started, stop func()) {
	t.Helper()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeys = []string{testKey}
	addrs, s := serve(t, cfg, zap.NewNop(), opts...)
	stop = func() { require.NoError(t, s.stop()) }
	t.Cleanup(stop)
	return started{Addrs: addrs}, stop
}

// A caller's trace: the ids a traceparent carries.
const (
	restTraceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	restParentID = "00f067aa0ba902b7"
	grpcTraceID  = "0af7651916cd43dd8448eb211c80319c"
	grpcParentID = "b7ad6b7169203331"
)

func traceparent(traceID, parentID string) string { return "00-" + traceID + "-" + parentID + "-01" }

// Marker strings in what clients send: none may reach a span.
const (
	promptMarker = "PROMPT-MARKER-5e1d"
	argsMarker   = "ARGS-MARKER-0c7b"
	resultMarker = "RESULT-MARKER-93aa"
)

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// genAI checks the client span of one Bedrock call: `chat <model>`, a child of the call's
// server span, with every GenAI attribute, the usage the client got and the calls it got.
func genAI(t *testing.T, c span, maxTokens int64, promptTokens, completionTokens, cached, cacheWrite int64, finish string, calls []string) {
	t.Helper()
	assert.Equal(t, "chat "+testModel, c.GetName())
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, c.GetKind())
	assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, c.GetStatus().GetCode())
	assert.Equal(t, "chat", c.str("gen_ai.operation.name"))
	assert.Equal(t, "aws.bedrock", c.str("gen_ai.provider.name"))
	assert.Equal(t, "aws.bedrock", c.str("gen_ai.system"))
	assert.Equal(t, testModel, c.str("gen_ai.request.model"))
	assert.Equal(t, maxTokens, c.int("gen_ai.request.max_tokens"))
	assert.Equal(t, "us-east-1", c.str("cloud.region"))
	assert.Positive(t, promptTokens)
	assert.Equal(t, promptTokens, c.int("gen_ai.usage.input_tokens"), "prompt_tokens as the client got it")
	assert.Equal(t, completionTokens, c.int("gen_ai.usage.output_tokens"))
	assert.Equal(t, cached, c.int("gen_ai.usage.cache_read.input_tokens"))
	assert.Equal(t, cacheWrite, c.int("gen_ai.usage.cache_creation.input_tokens"))
	assert.Equal(t, []string{finish}, c.strs("gen_ai.response.finish_reasons"))
	assert.Equal(t, calls, c.strs("gateway.tool_calls"))
	assert.Nil(t, c.attr("gateway.repair_attempt"), "no repair")
}

// TestTracesOverOTLP: a Nirmata call with a caller's traceparent, an OpenAI stream without
// one, and a gRPC stream with traceparent metadata each make a server span in the right
// trace with a client span `chat <model>` below it, exported over OTLP/HTTP; health checks
// make none; and nothing exported holds prompt text, tool arguments or results, or the key.
func TestTracesOverOTLP(t *testing.T) {
	rcv := newHTTPReceiver(t)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.endpoint})
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g, stop := startTraced(t, cfg)
	base := "http://" + g.HTTP

	// Nirmata, unary, a tool call, with the caller's trace.
	body := `{"model":"` + testModel + `","max_tokens":700,"messages":[
		{"role":"system","content":"You are a policy assistant. ` + promptMarker + `"},
		{"role":"user","content":"Require pod labels. ` + promptMarker + ` Use save_policy to store it."},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"` + argsMarker + `\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"{\"saved\":\"` + resultMarker + `\"}"},
		{"role":"assistant","content":"Saved."},
		{"role":"user","content":"Now require pod annotations too. ` + promptMarker + ` Use save_policy to store it."}],
		"tools":[{"type":"function","function":{"name":"save_policy","description":"Save a policy","parameters":{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}}}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/llm-apps/chat?client_type=otel-test", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "NIRMATA-API "+testKey)
	req.Header.Set("Traceparent", traceparent(restTraceID, restParentID))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var nirmata chatResponse
	require.NoError(t, json.Unmarshal(raw, &nirmata))
	require.Len(t, nirmata.ToolCalls, 1, string(raw))
	returnedArgs := []string{nirmata.ToolCalls[0].Function.Arguments}

	// OpenAI, streamed, a tool call, no caller's trace.
	oaResp, st := oaStream(t, g, testKey, oaRequest{
		Model:         testModel,
		MaxTokens:     600,
		Messages:      []oaMessage{oaUser("Use lookup_weather for Paris. " + promptMarker)},
		Tools:         []oaTool{weatherTool("lookup_weather")},
		StreamOptions: &oaStreamOptions{IncludeUsage: true},
	})
	require.Nil(t, st.failure)
	require.Equal(t, 1, st.choices)
	require.Len(t, st.answer.ToolCalls, 1)
	require.NotNil(t, st.usage)
	returnedArgs = append(returnedArgs, st.answer.ToolCalls[0].Function.Arguments)

	// gRPC, streamed, a tool call, with the caller's trace in metadata.
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	params, err := structpb.NewStruct(map[string]any{
		"type": "object", "properties": map[string]any{"filename": map[string]any{"type": "string"}}, "required": []any{"filename"},
	})
	require.NoError(t, err)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey,
		"traceparent", traceparent(grpcTraceID, grpcParentID))
	gst, err := llmgatewayv1.NewChatServiceClient(conn).ChatStream(ctx, &llmgatewayv1.ChatRequest{
		Model: testModel, MaxTokens: new(int32(500)), ClientType: "grpc-otel-test",
		Messages: []*llmgatewayv1.Message{{Role: user, Content: "Use save_policy for p.yaml. " + promptMarker}},
		Tools:    []*llmgatewayv1.Tool{{Function: &llmgatewayv1.FunctionDefinition{Name: "save_policy", Parameters: params}}},
	})
	require.NoError(t, err)
	var grpcUsage *llmgatewayv1.Usage
	var grpcArgs strings.Builder
	for {
		ev, err := gst.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		grpcArgs.WriteString(ev.GetToolCall().GetArguments())
		if d := ev.GetDone(); d != nil {
			grpcUsage = d.GetUsage()
		}
	}
	require.NotNil(t, grpcUsage)
	returnedArgs = append(returnedArgs, grpcArgs.String())
	header, err := gst.Header()
	require.NoError(t, err)

	// Probes make no spans.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		r, err := http.Get(base + path)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}

	stop()
	spans := rcv.spans()
	require.Len(t, spans, 6, "a server and a client span per call, nothing else")

	for _, s := range spans {
		assert.Equal(t, "llm-gateway", attrOf(s.resource, "service.name").GetStringValue())
		if v := buildinfo.Version(); v != "" {
			assert.Equal(t, v, attrOf(s.resource, "service.version").GetStringValue())
		} else {
			assert.Nil(t, attrOf(s.resource, "service.version"), "a development build has no version")
		}
	}

	// Nirmata.
	srv := serverSpan(t, spans, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "POST /llm-apps/chat", srv.GetName())
	assert.Equal(t, unhex(t, restTraceID), srv.GetTraceId(), "the caller's trace")
	assert.Equal(t, unhex(t, restParentID), srv.GetParentSpanId(), "the caller's span is the parent")
	assert.Equal(t, "otel-test", srv.str("gateway.client_type"))
	assert.Equal(t, testModel, srv.str("gateway.request.model"))
	assert.Equal(t, "ok", srv.str("gateway.outcome"))
	assert.Equal(t, int64(200), srv.int("http.response.status_code"))
	assert.Equal(t, "/llm-apps/chat", srv.str("http.route"))
	kids := children(spans, srv)
	require.Len(t, kids, 1)
	genAI(t, kids[0], 700, int64(nirmata.Usage.PromptTokens), int64(nirmata.Usage.CompletionTokens), 0, 0, "tool_use", []string{"save_policy"})

	// OpenAI: a trace of its own.
	srv = serverSpan(t, spans, oaResp.Header.Get("X-Request-Id"))
	assert.Equal(t, "POST /v1/chat/completions", srv.GetName())
	assert.Empty(t, srv.GetParentSpanId(), "a root: the client sent no trace")
	assert.Nil(t, srv.attr("gateway.client_type"), "none sent")
	kids = children(spans, srv)
	require.Len(t, kids, 1)
	genAI(t, kids[0], 600, st.usage.PromptTokens, st.usage.CompletionTokens, st.usage.PromptTokensDetails.CachedTokens, 0, "tool_use", []string{"lookup_weather"})

	// gRPC.
	srv = serverSpan(t, spans, header.Get("x-request-id")[0])
	assert.Equal(t, "llmgateway.v1.ChatService/ChatStream", srv.GetName())
	assert.Equal(t, unhex(t, grpcTraceID), srv.GetTraceId())
	assert.Equal(t, unhex(t, grpcParentID), srv.GetParentSpanId())
	assert.Equal(t, "grpc", srv.str("rpc.system.name"))
	assert.Equal(t, "OK", srv.str("rpc.response.status_code"))
	assert.Equal(t, "grpc-otel-test", srv.str("gateway.client_type"))
	kids = children(spans, srv)
	require.Len(t, kids, 1)
	genAI(t, kids[0], 500, int64(grpcUsage.GetPromptTokens()), int64(grpcUsage.GetCompletionTokens()),
		int64(grpcUsage.GetCachedTokens()), int64(grpcUsage.GetCacheWriteTokens()), "tool_use", []string{"save_policy"})

	all := rcv.exported()
	for _, secret := range append([]string{promptMarker, argsMarker, resultMarker, testKey, "Require pod labels", "lookup_weather for Paris"}, returnedArgs...) {
		require.NotEmpty(t, secret)
		assert.False(t, bytes.Contains(all, []byte(secret)), "%q was exported", secret)
	}
}

// TestTracesOverOTLPGRPC: OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports to a gRPC receiver at
// the traces endpoint, under OTEL_SERVICE_NAME; a repair is a second Bedrock call with
// its own numbered client span, and the two calls' usage adds up to what the client got.
func TestTracesOverOTLPGRPC(t *testing.T) {
	rcv := newGRPCReceiver(t)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rcv.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_SERVICE_NAME": "gateway-under-test"})
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.Sim.Faults = []string{"invalid_tool_args,times=1"}
	g, stop := startTraced(t, cfg)
	resp, raw := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey,
		policyBody(testModel, false, `,"max_tokens":800,"tool_validation":"repair"`))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Equal(t, "repaired", resp.Header.Get("X-Gateway-Tool-Validation"))
	var answer chatResponse
	require.NoError(t, json.Unmarshal(raw, &answer))
	stop()

	spans := rcv.spans()
	require.Len(t, spans, 3)
	srv := serverSpan(t, spans, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "gateway-under-test", attrOf(srv.resource, "service.name").GetStringValue())
	assert.Len(t, srv.GetParentSpanId(), 0, "a root")
	kids := children(spans, srv)
	require.Len(t, kids, 2)
	slices.SortFunc(kids, func(a, b span) int { return int(a.GetStartTimeUnixNano() - b.GetStartTimeUnixNano()) })
	assert.Nil(t, kids[0].attr("gateway.repair_attempt"))
	assert.Equal(t, int64(1), kids[1].int("gateway.repair_attempt"))
	var input, output int64
	for _, k := range kids {
		assert.Equal(t, "chat "+testModel, k.GetName())
		assert.Equal(t, int64(800), k.int("gen_ai.request.max_tokens"))
		assert.Equal(t, []string{"save_policy"}, k.strs("gateway.tool_calls"))
		input += k.int("gen_ai.usage.input_tokens")
		output += k.int("gen_ai.usage.output_tokens")
	}
	assert.Equal(t, int64(answer.Usage.PromptTokens), input, "usage is summed over the attempts")
	assert.Equal(t, int64(answer.Usage.CompletionTokens), output)
}

// TestTraceOfAFailedCall: a Bedrock error is the client span's error status, under
// Bedrock's error code and without its message; the server span has the outcome the
// client got.
func TestTraceOfAFailedCall(t *testing.T) {
	rcv := newHTTPReceiver(t)
	sim := recordSim(t, "throttle")
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rcv.endpoint + "/v1/traces"})
	g, stop := startTraced(t, defaultConfig(t), sim.upstream())
	resp, raw := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, policyBody(testModel, false, ""))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(raw))
	stop()

	spans := rcv.spans()
	require.Len(t, spans, 2)
	srv := serverSpan(t, spans, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "resource_exhausted", srv.str("gateway.outcome"))
	assert.Equal(t, "resource_exhausted", srv.str("error.type"))
	assert.Equal(t, int64(429), srv.int("http.response.status_code"))
	assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, srv.GetStatus().GetCode(), "a refusal the client can retry, not the gateway's fault")
	kids := children(spans, srv)
	require.Len(t, kids, 1)
	c := kids[0]
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, c.GetStatus().GetCode())
	assert.Equal(t, "ThrottlingException", c.GetStatus().GetMessage())
	assert.Equal(t, "ThrottlingException", c.str("error.type"))
	assert.Nil(t, c.attr("gen_ai.usage.input_tokens"))
	assert.Empty(t, c.GetEvents())
	var apiErr struct{ Error string }
	require.NoError(t, json.Unmarshal(raw, &apiErr))
	assert.False(t, bytes.Contains(rcv.exported(), []byte(apiErr.Error)), "Bedrock's message %q was exported", apiErr.Error)
}

// TestNoTracesWhenExporterIsNone: OTEL_TRACES_EXPORTER=none turns export off even with an
// endpoint set: the receiver gets nothing.
func TestNoTracesWhenExporterIsNone(t *testing.T) {
	rcv := newHTTPReceiver(t)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.endpoint, "OTEL_TRACES_EXPORTER": "none"})
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g, stop := startTraced(t, cfg)
	resp, raw := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, turn1)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	stop()
	assert.Empty(t, rcv.exported())
}

// TestTraceOfAStreamTheClientLeft: a stream whose client goes away mid-answer ends its
// Bedrock call, and the call's span says it was canceled.
func TestTraceOfAStreamTheClientLeft(t *testing.T) {
	rcv := newHTTPReceiver(t)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.endpoint})
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.Sim.DeltaDelay = 300 * time.Millisecond // the answer takes seconds; reading its first line, far less
	g, stop := startTraced(t, cfg)
	resp := leaveStream(t, g, testKey, twoTools)
	stop() // the drain waits for the call to end

	spans := rcv.spans()
	require.Len(t, spans, 2)
	srv := serverSpan(t, spans, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "canceled", srv.str("gateway.outcome"))
	kids := children(spans, srv)
	require.Len(t, kids, 1)
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, kids[0].GetStatus().GetCode())
	assert.Equal(t, "canceled", kids[0].str("error.type"))
	assert.Nil(t, kids[0].attr("gen_ai.usage.input_tokens"), "the answer never ended")
}

// TestTraceOfARefusedGRPCCall: a gRPC call refused for its key, before its message is read,
// still has its server span (docs/PROTOCOL.md 14.6: one per request), in the caller's trace,
// with the refusal as its outcome and no Bedrock call under it.
func TestTraceOfARefusedGRPCCall(t *testing.T) {
	rcv := newHTTPReceiver(t)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.endpoint})
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g, stop := startTraced(t, cfg)
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer not-a-key",
		"traceparent", traceparent(grpcTraceID, grpcParentID))
	_, err = llmgatewayv1.NewChatServiceClient(conn).Chat(ctx, &llmgatewayv1.ChatRequest{
		Messages: []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: "hi"}}})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	stop()

	spans := rcv.spans()
	require.Len(t, spans, 1, "the server span alone")
	srv := spans[0]
	assert.Equal(t, "llmgateway.v1.ChatService/Chat", srv.GetName())
	assert.Equal(t, unhex(t, grpcTraceID), srv.GetTraceId(), "the caller's trace")
	assert.Equal(t, unhex(t, grpcParentID), srv.GetParentSpanId())
	assert.Equal(t, "unauthenticated", srv.str("gateway.outcome"))
	assert.Equal(t, "UNAUTHENTICATED", srv.str("rpc.response.status_code"))
	assert.False(t, bytes.Contains(rcv.exported(), []byte("not-a-key")), "the key was exported")
}
