package core

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/route"
)

// failingUpstream answers every call with err, counting the calls.
type failingUpstream struct {
	err   error
	calls *atomic.Int32
}

func (u failingUpstream) Converse(context.Context, string, *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	u.calls.Add(1)
	return nil, u.err
}

func (u failingUpstream) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	u.calls.Add(1)
	return nil, u.err
}

// modelsService is a Service on up with two aliases.
func modelsService(up route.Upstream) *Service {
	return New(up, Options{DefaultModel: model, MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 2, Aliases: map[string][]route.Target{
			"agent": {{ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}}, "fast": {{ModelID: "amazon.nova-lite-v1:0"}},
		}}, zap.NewNop())
}

// TestUnknownModelRefusedFirst: a name that is neither an alias nor shaped like a Bedrock
// model id is a 404 naming it, clipped, and pointing to /v1/models and the aliases, for a
// chat, a stream and the capabilities alike, and Bedrock is never called.
func TestUnknownModelRefusedFirst(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	s := modelsService(failingUpstream{err: &bedrock.APIError{Code: bedrock.CodeThrottling}, calls: &calls})
	const want = `model "gpt-4o" is neither an alias of this gateway nor a Bedrock model id (provider.model, an inference profile such as us.provider.model, or an ARN); GET /v1/models lists the models this gateway serves, its aliases agent, fast`
	req := func(model string) *chat.Request {
		return &chat.Request{Model: model, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
	}
	_, res, err := s.Chat(t.Context(), req("gpt-4o"))
	assert.Equal(t, fault.Failure{Kind: fault.KindNotFound, Message: want, Param: "model", Reason: fault.ReasonModelNotFound},
		fault.Classify(t.Context(), err))
	assert.Equal(t, "gpt-4o", res.RequestModel, "the access line names it")
	_, _, err = s.Stream(t.Context(), req("gpt-4o"))
	assert.Equal(t, want, fault.Classify(t.Context(), err).Message)
	_, err = s.Capabilities("gpt-4o")
	assert.Equal(t, want, fault.Classify(t.Context(), err).Message)
	assert.Zero(t, calls.Load(), "refused before any call")

	long := strings.Repeat("x", 1000)
	_, _, err = s.Chat(t.Context(), req(long))
	f := fault.Classify(t.Context(), err)
	assert.Equal(t, fault.KindNotFound, f.Kind)
	assert.Contains(t, f.Message, `model "`+strings.Repeat("x", 64)+`…" (1000 bytes) is neither`, "a client's name is clipped")

	// A name of a Bedrock model id's shape goes to Bedrock: only Bedrock knows every model.
	_, _, err = s.Chat(t.Context(), req("acme.model-released-next-week-v1:0"))
	assert.Equal(t, fault.KindRateLimited, fault.Classify(t.Context(), err).Kind)
	assert.Equal(t, int32(1), calls.Load())
}

// TestUnknownToBedrock: Bedrock's own refusals of a model (ResourceNotFoundException, the
// ValidationException of an invalid model identifier) are the same 404, naming the model
// as the client named it and Bedrock's reason, unary and streamed; for an alias, the
// alias and its target.
func TestUnknownToBedrock(t *testing.T) {
	t.Parallel()
	for _, refusal := range []*bedrock.APIError{
		{Code: bedrock.CodeResourceNotFound, Message: "Could not resolve the foundation model from the provided model identifier.", StatusCode: 404},
		{Code: bedrock.CodeValidation, Message: "The provided model identifier is invalid.", StatusCode: 400},
	} {
		t.Run(refusal.Code, func(t *testing.T) {
			t.Parallel()
			s := modelsService(failingUpstream{err: refusal, calls: new(atomic.Int32)})
			const aliases = "; GET /v1/models lists the models this gateway serves, its aliases agent, fast"
			for _, tt := range []struct{ model, want string }{
				{"anthropic.claude-opus-9-v1:0", `model "anthropic.claude-opus-9-v1:0" is not a model Bedrock knows: ` + refusal.Message + aliases},
				{"agent", `model "agent" (alias of "us.anthropic.claude-sonnet-4-5-20250929-v1:0") is not a model Bedrock knows: ` + refusal.Message + aliases},
			} {
				req := &chat.Request{Model: tt.model, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
				_, _, err := s.Chat(t.Context(), req)
				assert.Equal(t, fault.Failure{Kind: fault.KindNotFound, Message: tt.want, Param: "model", Reason: fault.ReasonModelNotFound},
					fault.Classify(t.Context(), err))
				assert.ErrorIs(t, err, refusal, "Bedrock's error stays underneath, for the log")
				_, _, err = s.Stream(t.Context(), req)
				assert.Equal(t, tt.want, fault.Classify(t.Context(), err).Message, "streamed")
			}
		})
	}
}

// TestCapabilitiesOfUnknownModels: a model outside the capability table is described as
// unknown and without tools, not with the tools the gateway still sends it; a known one
// as the table says. The models list describes the default model by its id.
func TestCapabilitiesOfUnknownModels(t *testing.T) {
	t.Parallel()
	s := New(nil, Options{DefaultModel: "agent", MaxTools: 8, Aliases: map[string][]route.Target{
		"agent":  {{ModelID: model}},
		"opaque": {{ModelID: "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"}},
	}}, zap.NewNop())
	c, err := s.Capabilities("acme.model-released-next-week-v1:0")
	require.NoError(t, err)
	assert.False(t, c.Known)
	assert.False(t, c.ToolsSupported)
	assert.False(t, c.StreamingTools)
	assert.Equal(t, []string{}, c.ToolTypes)
	assert.Equal(t, []string{}, c.ToolChoice)

	c, err = s.Capabilities("")
	require.NoError(t, err)
	assert.True(t, c.Known)
	assert.True(t, c.ToolsSupported)
	var known []bool
	var ids []string
	for _, m := range c.Models {
		ids, known = append(ids, m.ID), append(known, m.Known)
		assert.Equal(t, m.Known, m.Tools, m.ID)
	}
	assert.Equal(t, []string{model, "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"}, ids)
	assert.Equal(t, []bool{true, false}, known)

	c, err = s.Capabilities("opaque")
	require.NoError(t, err)
	assert.False(t, c.Known, "an application inference profile's model cannot be told")
	assert.False(t, c.ToolsSupported)
}

// TestUnlistedModel: GET /v1/models/{id} of a name the gateway does not list is the same
// 404, naming it.
func TestUnlistedModel(t *testing.T) {
	t.Parallel()
	s := New(nil, Options{DefaultModel: model}, zap.NewNop())
	_, err := s.Model("sonnet")
	assert.Equal(t, fault.Failure{Kind: fault.KindNotFound, Param: "model", Reason: fault.ReasonModelNotFound,
		Message: `model "sonnet" is not one this gateway lists; GET /v1/models lists the models this gateway serves (it has no aliases)`},
		fault.Classify(t.Context(), err))
}
