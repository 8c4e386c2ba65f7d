package core

import (
	"context"
	"time"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/store"
)

// tokenCounter is an upstream that counts a request's input tokens (bedrock.Client).
type tokenCounter interface {
	CountTokens(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (int, error)
}

// CountTokens counts the input tokens req would take (Anthropic's count_tokens): it is
// resolved and translated exactly as a chat call would be, for the first target of its
// model or alias, and admitted against its key's limits as one request that spends no
// tokens. Bedrock's CountTokens counts the translation on the models that have it
// (capabilities.Features.CountTokens), called with the model's foundation id, which it
// wants rather than an inference profile's; elsewhere n is an estimate, a quarter of the
// translated request's bytes, and estimated is true. Errors are a chat call's, classified
// alike. The Result is filled as far as the call got.
func (s *Service) CountTokens(ctx context.Context, req *chat.Request) (n int, estimated bool, res Result, err error) {
	ctx = store.WithBudget(ctx, s.opts.StoreTimeout)
	t := &turn{id: req.ID, keyID: req.KeyID, start: time.Now(), ctx: ctx, req: req}
	if err := s.resolve(t); err != nil {
		return 0, false, t.res, err
	}
	admission, err := s.opts.Quota.Admit(ctx, req.KeyID, 0, 0)
	if err != nil {
		return 0, false, t.res, err
	}
	defer admission.Settle(ctx)
	counter, ok := t.up().(tokenCounter)
	if !ok || !t.model.CountTokens {
		return max(1, bedrock.EncodedLen(t.converse)/4), true, t.res, nil
	}
	release, err := s.admit()
	if err != nil {
		return 0, false, t.res, err
	}
	defer release()
	callCtx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	defer cancel()
	n, err = counter.CountTokens(callCtx, capabilities.Foundation(t.model.ID), t.converse)
	if err != nil {
		s.upstreamFailed(callCtx, t.id, t.model.ID, err)
		return 0, false, t.res, s.refused(t, err)
	}
	return n, false, t.res, nil
}
