package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// TestAnthropicModelNames: Anthropic's model names, Claude Code's defaults among them, are
// served without configuration on every surface, and reach Bedrock as the inference
// profile of the gateway's region (us-east-1 here), which the simulator resolves as
// Bedrock does (docs/BEDROCK.md L).
func TestAnthropicModelNames(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, defaultConfig(t), sim.upstream())
	url := "http://" + g.HTTP + "/llm-apps/chat"
	postOK(t, url, `{"model": "claude-opus-5-5", "messages": [{"role": "user", "content": "hi"}]}`)
	oaChat(t, g, testKey, oaRequest{Model: "claude-haiku-5-5", Messages: []oaMessage{oaUser("hi")}})
	oaChat(t, g, testKey, oaRequest{Model: "claude-sonnet-4-5-20250929", Messages: []oaMessage{oaUser("hi")}})
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx,
		grpcRequest(t, `{"model": "claude-3-5-haiku-latest", "messages": [{"role": "user", "content": "hi"}]}`))
	require.NoError(t, err)
	var models []string
	for _, c := range sim.received() {
		models = append(models, c.Model)
	}
	assert.Equal(t, []string{
		"us.anthropic.claude-opus-5-5",
		"us.anthropic.claude-haiku-5-5",
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"us.anthropic.claude-3-5-haiku-20241022-v1:0",
	}, models)
}
