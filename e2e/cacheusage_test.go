package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// TestCacheUsageOnEverySurface: Bedrock's prompt-cache counts reach every usage object
// (docs/PROTOCOL.md 12.3), with prompt tokens still including them, and the metrics.
func TestCacheUsageOnEverySurface(t *testing.T) {
	t.Parallel()
	const usage = `{"inputTokens":20,"outputTokens":5,"totalTokens":1525,"cacheReadInputTokens":1200,"cacheWriteInputTokens":300}`
	g := fakeBedrock(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":`+usage+`}`)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		writeFrame(t, w, "messageStart", `{"role":"assistant"}`)
		writeFrame(t, w, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"ok"}}`)
		writeFrame(t, w, "contentBlockStop", `{"contentBlockIndex":0}`)
		writeFrame(t, w, "messageStop", `{"stopReason":"end_turn"}`)
		writeFrame(t, w, "metadata", `{"usage":`+usage+`,"metrics":{"latencyMs":1}}`)
	})
	wantNirmata := map[string]any{"prompt_tokens": 1520.0, "completion_tokens": 5.0, "total_tokens": 1525.0, "cached_tokens": 1200.0, "cache_write_tokens": 300.0}

	// Nirmata unary and JSONL.
	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var unary struct{ Usage map[string]any }
	require.NoError(t, json.Unmarshal(body, &unary))
	assert.Equal(t, wantNirmata, unary.Usage)
	resp, body = post(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", "Bearer "+testKey, hello)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var done struct {
		Type  string
		Usage map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &done))
	assert.Equal(t, "done", done.Type)
	assert.Equal(t, wantNirmata, done.Usage)

	// OpenAI unary and stream.
	params := oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}}
	_, c := oaChat(t, g, testKey, params)
	assert.EqualValues(t, 1520, c.Usage.PromptTokens)
	assert.EqualValues(t, 1200, c.Usage.PromptTokensDetails.CachedTokens)
	assert.Equal(t, new(int64(300)), c.Usage.PromptTokensDetails.CacheWriteTokens)
	params.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	_, st := oaStream(t, g, testKey, params)
	require.Nil(t, st.failure)
	require.NotNil(t, st.usage)
	assert.EqualValues(t, 1200, st.usage.PromptTokensDetails.CachedTokens)

	// gRPC.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	answer, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, hello))
	require.NoError(t, err)
	assert.EqualValues(t, 1200, answer.GetUsage().GetCachedTokens())
	assert.EqualValues(t, 300, answer.GetUsage().GetCacheWriteTokens())
	assert.EqualValues(t, 1520, answer.GetUsage().GetPromptTokens())

	// Five answers, each read 1,200 and wrote 300.
	assert.EqualValues(t, 6000, metricValue(t, g, "gateway_cache_read_tokens_total", nil))
	assert.EqualValues(t, 1500, metricValue(t, g, "gateway_cache_write_tokens_total", nil))
}
