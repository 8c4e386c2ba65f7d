package server

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/metrics"
)

// callInfo is what the access log learns about one call while it runs: the transport
// creates it, the Service fills it in. It is not safe for concurrent use; one call's
// goroutine owns it.
type callInfo struct {
	start                     time.Time
	route                     string // the metrics route: chat, chat_stream, grpc_chat…
	code                      string // snake-case gRPC code of the answer; "" means ok
	model, clientType, keyID  string
	inputTokens, outputTokens int32
	toolCalls                 int
}

// finish records the call in the metrics.
func (i *callInfo) finish(m *metrics.Metrics) {
	code := i.code
	if code == "" {
		code = "ok"
	}
	m.Request(i.route, code, i.model, i.clientType, time.Since(i.start))
	m.Tokens(i.model, i.clientType, int(i.inputTokens), int(i.outputTokens))
	m.ToolCalls(i.model, i.clientType, i.toolCalls)
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, info *callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// callInfoFrom returns the call's info, or a throwaway one when the transport set none.
func callInfoFrom(ctx context.Context) *callInfo {
	if info, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		return info
	}
	return &callInfo{}
}

// fields are the info's access-log fields. No prompt text, arguments or keys: the key's
// identity is a digest prefix.
func (i *callInfo) fields() zap.Field {
	return zap.Inline(i)
}

// MarshalLogObject implements [zapcore.ObjectMarshaler].
func (i *callInfo) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("model", i.model)
	enc.AddString("client_type", i.clientType)
	if i.keyID != "" {
		enc.AddString("key_id", i.keyID)
	}
	enc.AddInt32("input_tokens", i.inputTokens)
	enc.AddInt32("output_tokens", i.outputTokens)
	enc.AddInt("tool_calls", i.toolCalls)
	return nil
}

func (i *callInfo) usage(u chat.Usage) {
	i.inputTokens, i.outputTokens = u.PromptTokens, u.CompletionTokens
}
