package openai

import (
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
)

// The body of POST /v1/chat/completions (docs/PROTOCOL.md 10.1), built from the shapes
// both REST surfaces share (package chatjson). Top-level members the struct does not
// declare (seed, logit_bias, metadata, … and any unknown one) land in Unknown and are
// listed in x-gateway-ignored-params; so are declared ones accepted without effect
// (see ignored). Unknown members deeper down are ignored without being listed.
type request struct {
	Model               string              `json:"model"`
	Messages            []*chatjson.Message `json:"messages"`
	Tools               []*chatjson.Tool    `json:"tools"`
	ToolChoice          chatjson.ToolChoice `json:"tool_choice"`
	Stream              bool                `json:"stream"`
	StreamOptions       *streamOptions      `json:"stream_options"`
	MaxTokens           *chatjson.WholeInt  `json:"max_tokens"`
	MaxCompletionTokens *chatjson.WholeInt  `json:"max_completion_tokens"`
	Temperature         *chatjson.Number    `json:"temperature"`
	TopP                *chatjson.Number    `json:"top_p"`
	Stop                chatjson.Stop       `json:"stop"`
	N                   *chatjson.WholeInt  `json:"n"`
	Logprobs            *bool               `json:"logprobs"`
	TopLogprobs         *chatjson.WholeInt  `json:"top_logprobs"`
	Modalities          []string            `json:"modalities"`
	Audio               jsontext.Value      `json:"audio"`
	User                string              `json:"user"`
	SafetyIdentifier    string              `json:"safety_identifier"`
	PromptCacheKey      string              `json:"prompt_cache_key"`
	ServiceTier         string              `json:"service_tier"`
	ParallelToolCalls   *bool               `json:"parallel_tool_calls"`
	// PromptCacheRetention "24h" asks automatic cache points for the 1h TTL (12.2).
	PromptCacheRetention string `json:"prompt_cache_retention"`
	// MaxToolRounds is the gateway's extension (docs/PROTOCOL.md 13.5).
	MaxToolRounds *chatjson.WholeInt `json:"max_tool_rounds"`
	// ReasoningEffort, and the thinking extension, switch extended thinking on (11.1).
	ReasoningEffort string             `json:"reasoning_effort"`
	Thinking        *chatjson.Thinking `json:"thinking"`
	// ToolValidation is the gateway's extension (docs/PROTOCOL.md 13.2).
	ToolValidation string `json:"tool_validation"`
	// ResponseFormat asks for structured output (13.3); json_schema's strict is read and
	// not listed: the gateway always asks for the schema.
	ResponseFormat *chatjson.ResponseFormat `json:"response_format"`
	Unknown        jsontext.Value           `json:",embed"`
}

type streamOptions struct {
	IncludeUsage       bool           `json:"include_usage"`
	IncludeObfuscation jsontext.Value `json:"include_obfuscation"`
}

// call is a decoded request and how to answer it.
type call struct {
	req                  *chat.Request
	stream, includeUsage bool
}

// serviceTiers maps OpenAI's service_tier values to Bedrock's; "" sends none.
var serviceTiers = map[string]string{
	"": "", "auto": "", "default": "default", "flex": "flex", "priority": "priority", "fast": "priority", "scale": "reserved",
}

// decodeRequest reads a POST /v1/chat/completions body into the chat model. It refuses,
// naming the field, what the gateway cannot honour (n above 1, logprobs, audio) and
// lists in req.Ignored what it accepts without effect.
func decodeRequest(body []byte) (*call, error) {
	var r request
	if err := chatjson.Decode(body, &r); err != nil {
		return nil, err
	}
	out := &chat.Request{
		Model:       r.Model,
		ToolChoice:  chat.ToolChoice(r.ToolChoice),
		MaxTokens:   r.MaxTokens.Int32(),
		Temperature: r.Temperature.Float64(),
		TopP:        r.TopP.Float64(),
		Stop:        r.Stop,
		User:        r.User,
		CacheKey:    r.PromptCacheKey,

		ParallelToolCalls: r.ParallelToolCalls,
		MaxToolRounds:     r.MaxToolRounds.Int32(),

		ReasoningEffort: r.ReasoningEffort,
		Thinking:        r.Thinking.Chat(),
		CacheRetention:  r.PromptCacheRetention,
		ResponseFormat:  r.ResponseFormat.Chat(),
		ToolValidation:  r.ToolValidation,
	}
	if r.SafetyIdentifier != "" {
		out.User = r.SafetyIdentifier
	}
	if r.MaxCompletionTokens != nil {
		// The translator checks max_tokens the same way; this names the field the client
		// sent.
		if *r.MaxCompletionTokens < 1 {
			return nil, invalid("max_completion_tokens must be at least 1, got %d", *r.MaxCompletionTokens)
		}
		out.MaxTokens = r.MaxCompletionTokens.Int32()
	}
	if err := r.unsupported(); err != nil {
		return nil, err
	}
	tier, ok := serviceTiers[r.ServiceTier]
	if !ok {
		return nil, invalid(`service_tier %s is not one of "auto", "default", "flex", "priority", "fast", "scale"`, clip.Quote(r.ServiceTier))
	}
	out.ServiceTier = tier
	var err error
	if out.Messages, err = chatjson.Messages(r.Messages); err != nil {
		return nil, err
	}
	if out.Tools, err = chatjson.Tools(r.Tools); err != nil {
		return nil, err
	}
	out.Ignored = r.ignored()
	c := &call{req: out, stream: r.Stream}
	if r.StreamOptions != nil {
		c.includeUsage = r.StreamOptions.IncludeUsage
	}
	return c, nil
}

// unsupported refuses the parameters that ask for what Bedrock cannot give: several
// choices, log probabilities, audio.
func (r *request) unsupported() error {
	switch {
	case r.N != nil && *r.N < 1:
		return invalid("n must be at least 1, got %d", *r.N)
	case r.N != nil && *r.N > 1:
		return unsupportedParameter("n: %d choices asked for; Bedrock answers one, so n must be 1", *r.N)
	case r.Logprobs != nil && *r.Logprobs:
		return unsupportedParameter("logprobs: Bedrock does not return log probabilities")
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return unsupportedParameter("top_logprobs: Bedrock does not return log probabilities")
	case len(r.Modalities) > 0 && !slices.Equal(r.Modalities, []string{"text"}):
		return unsupportedParameter(`modalities: only ["text"] is supported`)
	case len(r.Audio) > 0 && r.Audio.Kind() != 'n':
		return unsupportedParameter("audio: audio output is not supported")
	}
	return nil
}

// ignored lists the top-level members accepted without effect: those declared here that
// ask for what the gateway does not do yet or does not do on this request, then every
// undeclared member (seed, frequency_penalty, metadata, …) that is not null, at most
// httpx.MaxIgnored in all (chatjson.Undeclared).
func (r *request) ignored() []string {
	var out []string
	if r.MaxCompletionTokens != nil && r.MaxTokens != nil {
		out = append(out, "max_tokens")
	}
	if o := r.StreamOptions; o != nil && !r.Stream {
		out = append(out, "stream_options")
	} else if o != nil && len(o.IncludeObfuscation) > 0 && o.IncludeObfuscation.Kind() != 'n' {
		out = append(out, "stream_options.include_obfuscation")
	}
	return chatjson.UnknownMembers(out, r.Unknown, httpx.MaxIgnored)
}

// invalid refuses a bad value, with a message that starts with the field's path.
func invalid(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

// unsupportedParameter refuses a parameter Bedrock cannot honour, with a message that
// starts with the parameter's name.
func unsupportedParameter(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedParameter, format, args...)
}
