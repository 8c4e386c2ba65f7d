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

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func TestMarshalerMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"capabilities in the contract's shape", &v1.Capabilities{MaxTools: 128}, `{"tools_supported":false,"tool_types":[],"streaming_tools":false,"max_tools":128,"streaming_formats":[],"tool_choice":[],"default_model":"","models":[]}`},
		{"other proto via protojson", &v1.GetCapabilitiesRequest{}, `{"model":""}`},
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

func TestMarshalerDecoding(t *testing.T) {
	t.Parallel()
	var m runtime.Marshaler = Marshaler{}
	other := &v1.GetCapabilitiesRequest{}
	require.NoError(t, m.Unmarshal([]byte(`{"model":"m","unknown":1}`), other))
	require.Equal(t, "m", other.GetModel())
	other = &v1.GetCapabilitiesRequest{}
	require.NoError(t, m.NewDecoder(strings.NewReader(`{"model":"n","x":[1]}`)).Decode(other))
	require.Equal(t, "n", other.GetModel())
}

func TestMarshalerEncoder(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	enc := Marshaler{}.NewEncoder(&buf)
	require.NoError(t, enc.Encode(&v1.Capabilities{MaxTools: 1}))
	require.NoError(t, enc.Encode(&v1.Capabilities{MaxTools: 2}))
	require.Equal(t, `{"tools_supported":false,"tool_types":[],"streaming_tools":false,"max_tools":1,"streaming_formats":[],"tool_choice":[],"default_model":"","models":[]}`+"\n"+
		`{"tools_supported":false,"tool_types":[],"streaming_tools":false,"max_tools":2,"streaming_formats":[],"tool_choice":[],"default_model":"","models":[]}`+"\n", buf.String())
	require.Equal(t, "application/json", Marshaler{}.ContentType(&v1.Capabilities{}))
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
