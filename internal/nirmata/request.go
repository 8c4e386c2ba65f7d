package nirmata

import (
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
)

// The body of POST /llm-apps/chat (docs/PROTOCOL.md 3), built from the shapes both REST
// surfaces share (package chatjson). Unknown members are ignored at every depth.
type request struct {
	Model       string              `json:"model"`
	Messages    []*chatjson.Message `json:"messages"`
	Tools       []*chatjson.Tool    `json:"tools"`
	ToolChoice  chatjson.ToolChoice `json:"tool_choice"`
	Stream      bool                `json:"stream"`
	MaxTokens   *chatjson.WholeInt  `json:"max_tokens"`
	Temperature *chatjson.Number    `json:"temperature"`
	TopP        *chatjson.Number    `json:"top_p"`
	Stop        chatjson.Stop       `json:"stop"`
	// ParallelToolCalls false asks for one tool call per answer (docs/PROTOCOL.md 13.4).
	ParallelToolCalls *bool `json:"parallel_tool_calls"`
	// MaxToolRounds bounds the task's tool rounds (13.5).
	MaxToolRounds *chatjson.WholeInt `json:"max_tool_rounds"`
	// ReasoningEffort and Thinking switch extended thinking on (11.1); StreamReasoning
	// asks a JSONL stream for its reasoning lines (11.2).
	ReasoningEffort string             `json:"reasoning_effort"`
	Thinking        *chatjson.Thinking `json:"thinking"`
	StreamReasoning bool               `json:"stream_reasoning"`
	// PromptCacheRetention "24h" asks automatic cache points for the 1h TTL (12.2), as on
	// OpenAI's surface.
	PromptCacheRetention string `json:"prompt_cache_retention"`
	// ResponseFormat asks for structured output (13.3).
	ResponseFormat *chatjson.ResponseFormat `json:"response_format"`
	// ToolValidation is off, report or repair (13.2); the core checks the value.
	ToolValidation string `json:"tool_validation"`
}

// DecodeRequest reads a POST /llm-apps/chat body. It checks JSON syntax and the type of
// every known member; values (roles, tool names, argument JSON, limits) are the
// translator's to check. stream is the body's own "stream" switch.
func DecodeRequest(body []byte) (req *chat.Request, stream bool, err error) {
	var r request
	if err := chatjson.Decode(body, &r); err != nil {
		return nil, false, err
	}
	out := &chat.Request{
		Model:       r.Model,
		ToolChoice:  chat.ToolChoice(r.ToolChoice),
		MaxTokens:   r.MaxTokens.Int32(),
		Temperature: r.Temperature.Float64(),
		TopP:        r.TopP.Float64(),
		Stop:        r.Stop,

		ParallelToolCalls: r.ParallelToolCalls,
		MaxToolRounds:     r.MaxToolRounds.Int32(),

		ReasoningEffort: r.ReasoningEffort,
		Thinking:        r.Thinking.Chat(),
		StreamReasoning: r.StreamReasoning,
		CacheRetention:  r.PromptCacheRetention,
		ResponseFormat:  r.ResponseFormat.Chat(),
		ToolValidation:  r.ToolValidation,
	}
	if out.Messages, err = chatjson.Messages(r.Messages); err != nil {
		return nil, false, err
	}
	if out.Tools, err = chatjson.Tools(r.Tools); err != nil {
		return nil, false, err
	}
	return out, r.Stream, nil
}
