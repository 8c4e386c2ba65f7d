package grpcapi

import (
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/coretest"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client serves svc over gRPC on a loopback port for the test's duration.
func client(t *testing.T, svc *core.Service) llmgatewayv1.ChatServiceClient {
	t.Helper()
	return loggedClient(t, svc, zap.NewNop())
}

// loggedClient is client with the calls observed in log.
func loggedClient(t *testing.T, svc *core.Service, log *zap.Logger) llmgatewayv1.ChatServiceClient {
	t.Helper()
	s, _ := NewServer(svc, Options{Keys: &auth.Keyring{}, MaxMsgBytes: 1 << 20, StreamWriteTimeout: time.Minute, Observer: observe.New(log, svc.Metrics(), nil)})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(lis) //nolint:errcheck // Stop ends it
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return llmgatewayv1.NewChatServiceClient(conn)
}

var hi = &llmgatewayv1.ChatRequest{Messages: []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: "hi"}}}

// errorInfo is the ErrorInfo detail of a status.
func errorInfo(t *testing.T, s *status.Status) *errdetails.ErrorInfo {
	t.Helper()
	for _, d := range s.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	t.Fatalf("no ErrorInfo in %v", s.Details())
	return nil
}

func TestPanicIsInternal(t *testing.T) {
	t.Parallel()
	obs, logs := observer.New(zap.InfoLevel)
	log := zap.New(obs)
	_, err := loggedClient(t, coretest.Service(coretest.Panicking{}, log), log).Chat(t.Context(), hi)
	s := status.Convert(err)
	assert.Equal(t, codes.Internal, s.Code())
	assert.Equal(t, "internal error", s.Message())
	info := errorInfo(t, s)
	assert.Equal(t, "INTERNAL", info.GetReason())
	assert.Len(t, info.GetMetadata()["request_id"], 28)
	assert.Equal(t, 1, logs.FilterMessage("panic serving request").Len(), "the detail goes to the log")
}

// A bug once a stream is relayed (on its own goroutine) ends the call with Internal after
// an error event carrying the same status, and the server survives it.
func TestStreamPanicIsInternal(t *testing.T) {
	t.Parallel()
	obs, logs := observer.New(zap.InfoLevel)
	log := zap.New(obs)
	c := loggedClient(t, coretest.Service(coretest.PanicsMidStream{}, log), log)
	for range 2 { // the second call proves the process survived the first
		st, err := c.ChatStream(t.Context(), hi)
		require.NoError(t, err)
		var last *llmgatewayv1.ChatStreamEvent
		for {
			ev, err := st.Recv()
			if err != nil {
				assert.Equal(t, codes.Internal, status.Code(err))
				assert.NotContains(t, status.Convert(err).Message(), "secret")
				break
			}
			last = ev
		}
		require.NotNil(t, last.GetError())
		assert.Equal(t, int32(codes.Internal), last.GetError().GetCode())
		assert.Len(t, last.GetError().GetDetails(), 1, "the ErrorInfo")
		assert.NotContains(t, last.String(), "secret")
	}
	assert.Equal(t, 2, logs.FilterMessage("panic serving stream").Len())
}

func TestStatusDetails(t *testing.T) {
	t.Parallel()
	s := statusOf("req-1", fault.Failure{Kind: fault.KindRateLimited, Message: "slow down", RetryAfter: 2 * time.Second})
	assert.Equal(t, codes.ResourceExhausted, s.Code())
	info := errorInfo(t, s)
	assert.Equal(t, "RATE_LIMITED", info.GetReason())
	assert.Equal(t, errorDomain, info.GetDomain())
	assert.Equal(t, "req-1", info.GetMetadata()["request_id"])
	var retry *errdetails.RetryInfo
	for _, d := range s.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry)
	assert.Equal(t, 2*time.Second, retry.GetRetryDelay().AsDuration())

	plain := statusOf("req-2", fault.Failure{Kind: fault.KindInvalid, Message: "bad"})
	assert.Len(t, plain.Details(), 1, "no RetryInfo when a retry will not help")
}

// TestStatuses: every kind has its gRPC code and reason, and the code's name is the kind's
// code, which the REST bodies, the access log and the metrics carry.
func TestStatuses(t *testing.T) {
	t.Parallel()
	for k := range fault.Kind(fault.Kinds) {
		assert.NotEmpty(t, statuses[k].reason, "kind %d has a reason", k)
		assert.Equal(t, k.Code(), codeName(statuses[k].code), "kind %d", k)
	}
	assert.Equal(t, codes.Unimplemented, statusOf("", fault.Failure{Kind: fault.KindWrongMethod}).Code())
	assert.Equal(t, codes.Internal, statusOf("", fault.Failure{Kind: fault.KindCredentials}).Code())
	assert.Equal(t, codes.Unavailable, statusOf("", fault.Failure{Kind: fault.KindNoCredentials}).Code())
}

func TestCodeName(t *testing.T) {
	t.Parallel()
	for c, want := range map[codes.Code]string{
		codes.ResourceExhausted:  "resource_exhausted",
		codes.InvalidArgument:    "invalid_argument",
		codes.Unavailable:        "unavailable",
		codes.DeadlineExceeded:   "deadline_exceeded",
		codes.NotFound:           "not_found",
		codes.Internal:           "internal",
		codes.Unauthenticated:    "unauthenticated",
		codes.OK:                 "ok", // the gRPC access log's code of a call that succeeded
		codes.FailedPrecondition: "failed_precondition",
	} {
		assert.Equal(t, want, codeName(c))
	}
}

func TestFromProto(t *testing.T) {
	t.Parallel()
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{}, "a": map[string]any{}}})
	require.NoError(t, err)
	in := &llmgatewayv1.ChatRequest{
		Model: "m", ClientType: "cli", Stop: []string{"END"},
		Messages: []*llmgatewayv1.Message{
			{Role: llmgatewayv1.Role_ROLE_DEVELOPER, Content: "be brief"},
			{Role: llmgatewayv1.Role_ROLE_USER, Parts: []*llmgatewayv1.ContentPart{
				{Part: &llmgatewayv1.ContentPart_Text{Text: "what is this?"}},
				{Part: &llmgatewayv1.ContentPart_ImageUrl{ImageUrl: &llmgatewayv1.ImageURL{Url: "data:image/png;base64,AA=="}}},
			}},
			{Role: llmgatewayv1.Role_ROLE_ASSISTANT, ToolCalls: []*llmgatewayv1.ToolCall{{Id: "c1", Function: &llmgatewayv1.FunctionCall{Name: "f", Arguments: `{"x":1}`}}}},
			{Role: llmgatewayv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "ok"},
			{Role: llmgatewayv1.Role(42)},
		},
		Tools: []*llmgatewayv1.Tool{
			{Function: &llmgatewayv1.FunctionDefinition{Name: "f", Parameters: schema}},
			{Name: "g", ParametersJson: `{"type":"object"}`},
		},
		ToolChoice: &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Function{Function: "f"}},
	}
	got, err := fromProto(in)
	require.NoError(t, err)
	assert.Equal(t, &chat.Request{
		Model: "m", ClientType: "cli", Stop: []string{"END"},
		Messages: []chat.Message{
			{Role: "developer", Content: "be brief"},
			{Role: "user", Parts: []chat.Part{{Type: "text", Text: "what is this?"}, {Type: "image_url", Image: &chat.ImageURL{URL: "data:image/png;base64,AA=="}}}},
			{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}}},
			{Role: "tool", ToolCallID: "c1", Content: "ok"},
			{Role: "42"}, // refused by the translator, naming the field
		},
		Tools: []chat.Tool{
			// A Struct has no key order: written sorted, the same bytes every time.
			{Name: "f", Parameters: []byte(`{"properties":{"a":{},"b":{}},"type":"object"}`), Wrapped: true},
			{Name: "g", Parameters: []byte(`{"type":"object"}`)},
		},
		ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "f"},
	}, got)
}

// TestFromProtoCacheControlAndFile: cache_control on a part, a message and a tool (both
// forms; the hint is the Tool's own, beside function), and a file part.
func TestFromProtoCacheControlAndFile(t *testing.T) {
	t.Parallel()
	eph := func(ttl string) *llmgatewayv1.CacheControl {
		return &llmgatewayv1.CacheControl{Type: "ephemeral", Ttl: ttl}
	}
	in := &llmgatewayv1.ChatRequest{
		Messages: []*llmgatewayv1.Message{
			{Role: llmgatewayv1.Role_ROLE_SYSTEM, Content: "s", CacheControl: eph("1h")},
			{Role: llmgatewayv1.Role_ROLE_USER, Parts: []*llmgatewayv1.ContentPart{
				{Part: &llmgatewayv1.ContentPart_Text{Text: "read this"}, CacheControl: eph("")},
				{Part: &llmgatewayv1.ContentPart_File{File: &llmgatewayv1.File{FileData: "data:application/pdf;base64,JVBERg==", Filename: "r.pdf"}}, CacheControl: eph("5m")},
				{Part: &llmgatewayv1.ContentPart_File{File: &llmgatewayv1.File{FileId: "file-1"}}},
			}, CacheControl: &llmgatewayv1.CacheControl{}},
		},
		Tools: []*llmgatewayv1.Tool{
			{Function: &llmgatewayv1.FunctionDefinition{Name: "f"}, CacheControl: eph("")},
			{Name: "g", CacheControl: &llmgatewayv1.CacheControl{Type: "other"}},
		},
	}
	got, err := fromProto(in)
	require.NoError(t, err)
	assert.Equal(t, &chat.Request{
		Messages: []chat.Message{
			{Role: "system", Content: "s", CacheControl: &chat.CacheControl{Type: "ephemeral", TTL: "1h"}},
			{Role: "user", Parts: []chat.Part{
				{Type: "text", Text: "read this", CacheControl: &chat.CacheControl{Type: "ephemeral"}},
				{Type: "file", File: &chat.File{Data: "data:application/pdf;base64,JVBERg==", Filename: "r.pdf"}, CacheControl: &chat.CacheControl{Type: "ephemeral", TTL: "5m"}},
				{Type: "file", File: &chat.File{FileID: "file-1"}},
			}, CacheControl: &chat.CacheControl{}}, // an empty hint: the translator refuses it, naming the field
		},
		Tools: []chat.Tool{
			{Name: "f", Wrapped: true, CacheControl: &chat.CacheControl{Type: "ephemeral"}},
			{Name: "g", CacheControl: &chat.CacheControl{Type: "other"}},
		},
	}, got)
}

// TestFromProtoToolValidation: tool_validation, and strict in both forms, the function's
// winning as the rest of it does (docs/PROTOCOL.md 13.1, 13.2).
func TestFromProtoToolValidation(t *testing.T) {
	t.Parallel()
	got, err := fromProto(&llmgatewayv1.ChatRequest{ToolValidation: "repair", Tools: []*llmgatewayv1.Tool{
		{Function: &llmgatewayv1.FunctionDefinition{Name: "f", Strict: true}},
		{Name: "g", Strict: true},
		{Function: &llmgatewayv1.FunctionDefinition{Name: "h"}, Strict: true},
	}})
	require.NoError(t, err)
	assert.Equal(t, &chat.Request{ToolValidation: "repair", Tools: []chat.Tool{
		{Name: "f", Wrapped: true, Strict: true}, {Name: "g", Strict: true}, {Name: "h", Wrapped: true},
	}}, got)
}

func TestFromProtoToolChoiceModes(t *testing.T) {
	t.Parallel()
	for mode, want := range map[llmgatewayv1.ToolChoiceMode]string{
		llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_UNSPECIFIED: "",
		llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO:        chat.ChoiceAuto,
		llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_NONE:        chat.ChoiceNone,
		llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED:    chat.ChoiceRequired,
	} {
		got, err := fromProto(&llmgatewayv1.ChatRequest{ToolChoice: &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: mode}}})
		require.NoError(t, err, mode)
		assert.Equal(t, want, got.ToolChoice.Mode, mode)
	}
	// A mode from a newer client must not quietly become auto.
	_, err := fromProto(&llmgatewayv1.ChatRequest{ToolChoice: &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: 7}}})
	var refused *fault.RequestError
	require.ErrorAs(t, err, &refused)
	assert.EqualError(t, err, "invalid request: tool_choice.mode 7 is not a ToolChoiceMode")
	assert.Equal(t, "tool_choice.mode", refused.Param)
}

// TestValidationProto: a call's violations on ToolCall and on the arguments delta, the
// outcome in metadata.tool_validation (docs/PROTOCOL.md 13.2).
func TestValidationProto(t *testing.T) {
	t.Parallel()
	errs := []string{`/replicas: expected integer, got string`}
	out := responseProto(&chat.Response{Finish: chat.FinishToolCalls, ToolValidation: "invalid",
		ToolCalls: []chat.ToolCall{{ID: "t1", Name: "save", Arguments: `{"replicas":"3"}`, ValidationErrors: errs}, {ID: "t2", Name: "list", Arguments: `{}`}}})
	assert.Equal(t, errs, out.GetToolCalls()[0].GetValidationErrors())
	assert.Empty(t, out.GetToolCalls()[1].GetValidationErrors())
	assert.Equal(t, "invalid", out.GetMetadata().GetToolValidation())
	ev := eventProto(&chat.Event{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: `{"replicas":"3"}`, ValidationErrors: errs}}, false)
	want := &llmgatewayv1.ToolCallDelta{Index: 1, Arguments: `{"replicas":"3"}`, ValidationErrors: errs}
	assert.Empty(t, cmp.Diff(want, ev.GetToolCall(), protocmp.Transform()))
}
