package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/route"
)

// modelRecorder answers every call with a short text, recording the model ids it was called
// with.
type modelRecorder struct {
	mu  sync.Mutex
	ids []string
}

func (u *modelRecorder) Converse(_ context.Context, id string, _ *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ids = append(u.ids, id)
	text := "hi"
	return &bedrock.ConverseResponse{StopReason: "end_turn",
		Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{{Text: &text}}}}}, nil
}

func (u *modelRecorder) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	panic("not called")
}

// TestAnthropicNames: a name of Anthropic's API reaches Bedrock as the inference profile of
// the gateway's region, on the default model too; an alias of the same name wins; the
// capabilities and the model look-up take the names; the Result keeps the client's name.
func TestAnthropicNames(t *testing.T) {
	t.Parallel()
	up := &modelRecorder{}
	s := New(up, Options{DefaultModel: "claude-haiku-4-5-20251001", Region: "eu-west-1", MaxTools: 8, MaxMessages: 8,
		MaxMessageBytes: 1 << 20, UpstreamTimeout: time.Minute, MaxConcurrent: 2,
		Aliases: map[string][]route.Target{"claude-sonnet-4-5": {{ModelID: "amazon.nova-pro-v1:0"}}}}, zap.NewNop())
	for _, name := range []string{"claude-opus-5-5", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "", "eu.anthropic.claude-opus-4-6-v1"} {
		_, res, err := s.Chat(t.Context(), &chat.Request{Model: name, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}})
		require.NoError(t, err, name)
		assert.Equal(t, name, res.RequestModel)
	}
	assert.Equal(t, []string{
		"eu.anthropic.claude-opus-5-5",
		"eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"amazon.nova-pro-v1:0", // the alias wins
		"eu.anthropic.claude-haiku-4-5-20251001-v1:0",
		"eu.anthropic.claude-opus-4-6-v1",
	}, up.ids)

	c, err := s.Capabilities("claude-3-7-sonnet-latest")
	require.NoError(t, err)
	assert.Equal(t, "eu.anthropic.claude-3-7-sonnet-20250219-v1:0", c.Model)
	assert.True(t, c.Reasoning)
	m, err := s.Model("claude-haiku-5-5")
	require.NoError(t, err)
	assert.Equal(t, ModelEntry{Name: "claude-haiku-5-5", ID: "eu.anthropic.claude-haiku-5-5"}, m)
	assert.Contains(t, s.Models(), ModelEntry{Name: "claude-haiku-4-5-20251001", ID: "eu.anthropic.claude-haiku-4-5-20251001-v1:0"}, "the default, resolved")
	_, err = s.Model("claude-sonnet-9")
	assert.Error(t, err)
}
