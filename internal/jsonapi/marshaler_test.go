package jsonapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	v1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func TestMarshalerMarshal(t *testing.T) {
	t.Parallel()
	event := &v1.ChatStreamEvent{Type: "content", Delta: "hi <&>"}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"chat response", &v1.ChatResponse{Message: "日本語 <&>", FinishReason: "stop"}, `{"message":"日本語 <&>","finish_reason":"stop"}`},
		{"capabilities", &v1.Capabilities{MaxTools: 128}, `{"tools_supported":false,"tool_types":[],"streaming_tools":false,"max_tools":128,"streaming_formats":[],"tool_choice":[],"default_model":"","models":[]}`},
		{"stream event without newline", event, `{"type":"content","delta":"hi <&>"}`},
		{"grpc-gateway stream chunk is unwrapped", map[string]any{"result": event}, `{"type":"content","delta":"hi <&>"}`},
		{"other proto via protojson", &v1.GetCapabilitiesRequest{}, `{"model":""}`},
		{"other map via protojson", map[string]any{"result": &v1.GetCapabilitiesRequest{Model: "m"}}, `{"result":{"model":"m"}}`},
		{"non-proto", []string{"a"}, `["a"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshaler{}.Marshal(tt.in)
			require.NoError(t, err)
			if !json.Valid(got) || tt.want == string(got) {
				require.Equal(t, tt.want, string(got))
				return
			}
			// protojson adds random spaces to stop people depending on its bytes.
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, got))
			require.Equal(t, tt.want, compact.String())
		})
	}
}

func TestMarshalerUnmarshal(t *testing.T) {
	t.Parallel()
	var m runtime.Marshaler = Marshaler{}

	req := &v1.ChatRequest{Model: "stale", Chunked: true}
	require.NoError(t, m.Unmarshal([]byte(`{"model":"m","stop":"END","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`), req))
	want := &v1.ChatRequest{Model: "m", Stop: []string{"END"},
		Messages: []*v1.Message{{Role: "user", Parts: []*v1.ContentPart{{Type: "text", Text: "hi"}}}}}
	require.Empty(t, cmp.Diff(want, req, protocmp.Transform()), "Unmarshal resets the message first")

	err := m.Unmarshal([]byte(`{"messages":[{"role":7}]}`), &v1.ChatRequest{})
	require.ErrorIs(t, err, ErrInvalidJSON)
	require.EqualError(t, err, "invalid request body: messages[0].role: want a string, got number")

	other := &v1.GetCapabilitiesRequest{}
	require.NoError(t, m.Unmarshal([]byte(`{"model":"m","unknown":1}`), other))
	require.Equal(t, "m", other.GetModel())
}

func TestMarshalerDecoder(t *testing.T) {
	t.Parallel()
	var m runtime.Marshaler = Marshaler{}

	req := &v1.ChatRequest{}
	require.NoError(t, m.NewDecoder(strings.NewReader(protocolExample)).Decode(req))
	direct, err := DecodeChatRequest([]byte(protocolExample))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(direct, req, protocmp.Transform()))

	err = m.NewDecoder(strings.NewReader("")).Decode(&v1.ChatRequest{})
	require.ErrorIs(t, err, ErrInvalidJSON)
	err = m.NewDecoder(strings.NewReader(`{"model":"m"} {}`)).Decode(&v1.ChatRequest{})
	require.ErrorIs(t, err, ErrInvalidJSON)

	other := &v1.GetCapabilitiesRequest{}
	require.NoError(t, m.NewDecoder(strings.NewReader(`{"model":"m","x":[1]}`)).Decode(other))
	require.Equal(t, "m", other.GetModel())
}

func TestMarshalerEncoder(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	enc := Marshaler{}.NewEncoder(&buf)
	require.NoError(t, enc.Encode(&v1.ChatStreamEvent{Type: "content", Delta: "a"}))
	require.NoError(t, enc.Encode(&v1.ChatStreamEvent{Type: "done", FinishReason: "stop"}))
	require.NoError(t, enc.Encode(&v1.ChatResponse{}))
	require.Equal(t, `{"type":"content","delta":"a"}`+"\n"+`{"type":"done","finish_reason":"stop"}`+"\n"+`{"message":"","finish_reason":""}`+"\n", buf.String())
}

func TestMarshalerContentTypes(t *testing.T) {
	t.Parallel()
	m := Marshaler{}
	require.Equal(t, "application/json", m.ContentType(&v1.ChatResponse{}))
	require.Equal(t, "application/x-ndjson", m.StreamContentType(&v1.ChatStreamEvent{}))
	require.Equal(t, []byte("\n"), m.Delimiter())
}

type fakeChatService struct {
	v1.UnimplementedChatServiceServer
}

func (fakeChatService) GetCapabilities(_ context.Context, req *v1.GetCapabilitiesRequest) (*v1.Capabilities, error) {
	if req.GetModel() == "missing" {
		return nil, status.Error(codes.NotFound, "no such model")
	}
	return &v1.Capabilities{
		ToolsSupported: true, ToolTypes: []string{"function"}, StreamingTools: true, MaxTools: 128,
		StreamingFormats: []string{"jsonl", "chunked"}, ToolChoice: []string{"auto", "none", "required", "function"},
		DefaultModel: "d", Models: []*v1.ModelCapabilities{{Id: req.GetModel(), Tools: true}},
	}, nil
}

// TestMarshalerWithServeMux runs the marshaler where the server will: behind
// grpc-gateway's mux, for the capabilities route.
func TestMarshalerWithServeMux(t *testing.T) {
	t.Parallel()
	mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, Marshaler{}))
	require.NoError(t, v1.RegisterChatServiceHandlerServer(t.Context(), mux, fakeChatService{}))

	get := func(path string) (*http.Response, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
		res := rec.Result()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(body)
	}

	res, body := get("/llm-apps/capabilities?model=m1")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.Equal(t, `{"tools_supported":true,"tool_types":["function"],"streaming_tools":true,"max_tools":128,`+
		`"streaming_formats":["jsonl","chunked"],"tool_choice":["auto","none","required","function"],`+
		`"default_model":"d","models":[{"id":"m1","tools":true,"streaming_tools":false,"tool_choice":[]}]}`, body)

	res, body = get("/capabilities")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `"models":[{"id":"","tools":true`)

	// Errors the server does not shape itself still come out as JSON via protojson.
	res, body = get("/capabilities?model=missing")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "no such model")
}

func TestMarshalerUnmarshalReuse(t *testing.T) {
	t.Parallel()
	// grpc-gateway may hand Unmarshal a message that already holds query parameters'
	// values; like protojson, the body replaces the whole message.
	req := &v1.ChatRequest{}
	require.NoError(t, Marshaler{}.Unmarshal([]byte(`{"model":"a","max_tokens":5}`), req))
	require.NoError(t, Marshaler{}.Unmarshal([]byte(`{"model":"b"}`), req))
	require.True(t, proto.Equal(&v1.ChatRequest{Model: "b"}, req))
}
