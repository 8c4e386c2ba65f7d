package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/config"
)

// TestUnknownModels: a model the gateway cannot serve is a 404 naming it on every surface,
// in each one's error shape, pointing to /v1/models and the aliases: a name that cannot be
// a Bedrock model id ("gpt-4o") before any call, and a well-formed id Bedrock does not know
// (the simulator answers ResourceNotFoundException, as Bedrock does) after it. The
// capabilities of a model outside the gateway's table say it is unknown, without tools.
func TestUnknownModels(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.ModelAliases = map[string][]config.Target{"fast": {{ModelID: "amazon.nova-lite-v1:0"}}}
	g := start(t, cfg)
	const points = "; GET /v1/models lists the models this gateway serves, its aliases fast"
	const notAnID = `model "gpt-4o" is neither an alias of this gateway nor a Bedrock model id (provider.model, an inference profile such as us.provider.model, or an ARN)` + points
	const unknownToBedrock = `model "anthropic.claude-opus-9-v1:0" is not a model Bedrock knows: Could not resolve the foundation model from the provided model identifier.` + points

	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	chatClient := llmgatewayv1.NewChatServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)

	for _, tt := range []struct{ model, want string }{{"gpt-4o", notAnID}, {"anthropic.claude-opus-9-v1:0", unknownToBedrock}} {
		t.Run(tt.model, func(t *testing.T) {
			resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat?model="+tt.model, "NIRMATA-API "+testKey, `{"messages":[{"role":"user","content":"hi"}]}`)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, string(body))
			var nirmata struct{ Error, Code string }
			require.NoError(t, json.Unmarshal(body, &nirmata))
			assert.Equal(t, tt.want, nirmata.Error)
			assert.Equal(t, "not_found", nirmata.Code)

			_, apiErr := oaRefusal(t, g, testKey, oaRequest{Model: tt.model, Messages: []oaMessage{oaUser("hi")}}, http.StatusNotFound)
			assert.Equal(t, tt.want, apiErr.Message)
			assert.Equal(t, "invalid_request_error", apiErr.Type)
			assert.Equal(t, "model_not_found", apiErr.Code)
			assert.Equal(t, "model", apiErr.Param)

			_, err := chatClient.Chat(ctx, &llmgatewayv1.ChatRequest{Model: tt.model,
				Messages: []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: "hi"}}})
			st := status.Convert(err)
			assert.Equal(t, codes.NotFound, st.Code())
			assert.Equal(t, tt.want, st.Message())
			require.NotEmpty(t, st.Details())
			info, ok := st.Details()[0].(*errdetails.ErrorInfo)
			require.True(t, ok)
			assert.Equal(t, "MODEL_NOT_FOUND", info.GetReason())
		})
	}

	// Capabilities: a name that cannot be a model is the same 404; a model outside the
	// table is unknown and offered no tools; a known one is known.
	resp, err := http.Get("http://" + g.HTTP + "/llm-apps/capabilities?model=gpt-4o")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, err = chatClient.GetCapabilities(t.Context(), &llmgatewayv1.GetCapabilitiesRequest{Model: "gpt-4o"})
	assert.Equal(t, codes.NotFound, status.Code(err))

	for _, tt := range []struct {
		model        string
		known, tools bool
	}{{"acme.model-released-next-week-v1:0", false, false}, {"fast", true, true}} {
		resp, err := http.Get("http://" + g.HTTP + "/llm-apps/capabilities?model=" + tt.model)
		require.NoError(t, err)
		var caps struct {
			Known          bool     `json:"known"`
			ToolsSupported bool     `json:"tools_supported"`
			StreamingTools bool     `json:"streaming_tools"`
			ToolChoice     []string `json:"tool_choice"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&caps))
		resp.Body.Close()
		assert.Equal(t, tt.known, caps.Known, tt.model)
		assert.Equal(t, tt.tools, caps.ToolsSupported, tt.model)
		assert.Equal(t, tt.tools, caps.StreamingTools, tt.model)
		assert.Equal(t, tt.tools, len(caps.ToolChoice) > 0, tt.model)

		pc, err := chatClient.GetCapabilities(t.Context(), &llmgatewayv1.GetCapabilitiesRequest{Model: tt.model})
		require.NoError(t, err)
		assert.Equal(t, tt.known, pc.GetKnown(), tt.model)
		assert.Equal(t, tt.tools, pc.GetToolsSupported(), tt.model)
		for _, m := range pc.GetModels() {
			assert.Equal(t, m.GetKnown(), m.GetTools(), m.GetId())
		}
	}
}

// TestUnlistedModelOnV1: GET /v1/models/{id} of a name the gateway does not list names it.
func TestUnlistedModelOnV1(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+g.HTTP+"/v1/models/gpt-4o", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	var body struct{ Error oaError }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "model_not_found", body.Error.Code)
	assert.Equal(t, `model "gpt-4o" is not one this gateway lists; GET /v1/models lists the models this gateway serves (it has no aliases)`, body.Error.Message)
}
