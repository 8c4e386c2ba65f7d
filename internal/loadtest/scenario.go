package loadtest

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DefaultModel is the model the scenarios ask for: a Claude model, so the simulator calls
// tools.
const DefaultModel = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// Format is how an answer is read and judged complete.
type Format string

const (
	// FormatUnary is one body read whole.
	FormatUnary Format = "unary"
	// FormatJSONL is the gateway's delta stream (docs/PROTOCOL.md 3.2): complete when the last
	// line is {"type":"done",…}.
	FormatJSONL Format = "jsonl"
	// FormatEventStream is Bedrock's ConverseStream: complete when a messageStop event came
	// and the last event is metadata.
	FormatEventStream Format = "eventstream"
	// FormatSSE is OpenAI's chat-completions stream (server-sent events): complete when every
	// data line before the last is a chat.completion.chunk object, one of them carries a
	// finish reason, and the last is "data: [DONE]".
	FormatSSE Format = "sse"
	// FormatAnthropicSSE is Anthropic's Messages stream (server-sent events): complete when
	// message_stop came last; an error event is a stream error.
	FormatAnthropicSSE Format = "anthropic-sse"
	// FormatOpenAI is OpenAI's unary chat completion, read whole and decoded: a
	// chat.completion object with one assistant choice, a finish reason, well-formed tool
	// calls and usage.
	FormatOpenAI Format = "openai"
)

// Streams reports whether answers in f are streams, read line by line (or frame by frame).
func (f Format) Streams() bool {
	return f == FormatJSONL || f == FormatEventStream || f == FormatSSE || f == FormatAnthropicSSE
}

// Formats are the formats an answer can be read in.
var Formats = []Format{FormatUnary, FormatJSONL, FormatEventStream, FormatSSE, FormatAnthropicSSE, FormatOpenAI}

// Scenario is one kind of request a load run repeats.
type Scenario struct {
	Name   string
	Path   string // path and query, appended to the target's base URL
	Body   []byte
	Format Format
	// Expect must occur in a complete answer: the unary body, the JSONL done line, or the
	// event stream's messageStop payload. It proves the run measured the intended work (a
	// tool call) rather than, say, a fast text answer. Nil checks nothing.
	Expect []byte
	// Usage: an OpenAI stream (FormatSSE) must report token usage in one of its chunks, as
	// it does when the body asks for it with stream_options.include_usage.
	Usage bool
}

// Scenarios are the names Lookup knows. The bedrock-* ones are the same requests in
// Bedrock's Converse form, sent through a plain proxy to the same simulator, so the
// simulator does the same work and the difference is the gateway's own cost. The openai-*
// ones are the same requests to an OpenAI-compatible surface (the gateway's
// /v1/chat/completions, and Portkey in the side-by-side run, sent the identical body): the
// chat body is already OpenAI's shape; the stream also asks for usage
// (stream_options.include_usage), and the answers are read as OpenAI's and checked for its
// shape. The anthropic-* ones are the same requests to Anthropic's Messages surface
// (/v1/messages), with its max_tokens (the gateway's default), read as its answers.
var Scenarios = []string{"unary", "stream", "bedrock-unary", "bedrock-stream", "openai-unary", "openai-stream",
	"anthropic-unary", "anthropic-stream"}

// benchTool is one tool every scenario offers; three of them, so the request carries a
// realistic tool list while the user text picks which get called.
type benchTool struct {
	name, description string
	schema            string // JSON schema; the simulator builds the call's arguments from it
}

// benchTools have schemas rich enough that the simulator streams each call's arguments in
// several fragments (about 8 bytes each): with two calls, a stream is about 30 lines.
var benchTools = []benchTool{
	{"get_weather", "Current weather and forecast for a city",
		`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":10},"include_hourly":{"type":"boolean"}},"required":["city"]}`},
	{"search_docs", "Search the operations runbooks",
		`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"since":{"type":"string","format":"date-time"}},"required":["query"]}`},
	{"save_policy", "Save a Kyverno policy to a file",
		`{"type":"object","properties":{"filename":{"type":"string"},"content":{"type":"string"}},"required":["filename","content"]}`},
}

// The simulator calls every tool the last user turn names (docs/PROTOCOL.md section 9).
const (
	unaryText  = "What is the weather in Paris? Use get_weather."
	streamText = "Check the weather in Paris with get_weather, then find the flood runbook with search_docs."
)

// Lookup returns the named scenario asking for model.
func Lookup(name, model string) (Scenario, error) {
	switch name {
	case "unary":
		return Scenario{Name: name, Path: "/llm-apps/chat?client_type=loadgen", Body: chatBody(model, unaryText, false),
			Format: FormatUnary, Expect: []byte(`"finish_reason":"tool_calls"`)}, nil
	case "stream":
		return Scenario{Name: name, Path: "/llm-apps/chat?stream=true&client_type=loadgen", Body: chatBody(model, streamText, true),
			Format: FormatJSONL, Expect: []byte(`"finish_reason":"tool_calls"`)}, nil
	case "openai-unary":
		return Scenario{Name: name, Path: "/v1/chat/completions", Body: openaiBody(model, unaryText, false),
			Format: FormatOpenAI, Expect: []byte(`"finish_reason":"tool_calls"`)}, nil
	case "openai-stream":
		return Scenario{Name: name, Path: "/v1/chat/completions", Body: openaiBody(model, streamText, true),
			Format: FormatSSE, Expect: []byte(`"finish_reason":"tool_calls"`), Usage: true}, nil
	case "anthropic-unary":
		return Scenario{Name: name, Path: "/v1/messages", Body: anthropicBody(model, unaryText, false),
			Format: FormatUnary, Expect: []byte(`"stop_reason":"tool_use"`)}, nil
	case "anthropic-stream":
		return Scenario{Name: name, Path: "/v1/messages", Body: anthropicBody(model, streamText, true),
			Format: FormatAnthropicSSE, Expect: []byte(`"stop_reason":"tool_use"`)}, nil
	case "bedrock-unary":
		return Scenario{Name: name, Path: modelPath(model) + "/converse", Body: converseBody(unaryText),
			Format: FormatUnary, Expect: []byte(`"stopReason":"tool_use"`)}, nil
	case "bedrock-stream":
		return Scenario{Name: name, Path: modelPath(model) + "/converse-stream", Body: converseBody(streamText),
			Format: FormatEventStream, Expect: []byte(`"stopReason":"tool_use"`)}, nil
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (known: %v)", name, slices.Clone(Scenarios))
}

// modelPath is Bedrock's /model/{modelId}, escaped as the gateway's upstream client escapes
// it (":" too), so the baseline's request line is byte for byte the gateway's.
func modelPath(model string) string {
	return "/model/" + strings.ReplaceAll(url.PathEscape(model), ":", "%3A")
}

// chatBody is the gateway's REST request (docs/PROTOCOL.md section 3) in the wrapped tool form
// the gollm client sends, which is also an OpenAI chat-completions request.
func chatBody(model, text string, stream bool) []byte {
	return toolsBody(model, text, stream, false)
}

// openaiBody is chatBody as an OpenAI client sends it: a stream also asks for the usage
// chunk (stream_options.include_usage), as OpenAI's SDKs do when asked to count tokens.
func openaiBody(model, text string, stream bool) []byte {
	return toolsBody(model, text, stream, stream)
}

func toolsBody(model, text string, stream, includeUsage bool) []byte {
	type function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  jsontext.Value `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	body := struct {
		Model         string         `json:"model"`
		Messages      []message      `json:"messages"`
		Tools         []tool         `json:"tools"`
		ToolChoice    string         `json:"tool_choice"`
		Stream        bool           `json:"stream,omitzero"`
		StreamOptions *streamOptions `json:"stream_options,omitzero"`
	}{Model: model, Messages: []message{{"user", text}}, ToolChoice: "auto", Stream: stream}
	if includeUsage {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for _, t := range benchTools {
		body.Tools = append(body.Tools, tool{"function", function{t.name, t.description, jsontext.Value(t.schema)}})
	}
	return mustMarshal(body)
}

// anthropicBody is chatBody as Anthropic's Messages API takes it: the same text and tools,
// and the max_tokens it requires, the gateway's default (docs/PROTOCOL.md 14.5), so
// Bedrock is asked the same.
func anthropicBody(model, text string, stream bool) []byte {
	type tool struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema jsontext.Value `json:"input_schema"`
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type toolChoice struct {
		Type string `json:"type"`
	}
	body := struct {
		Model      string     `json:"model"`
		MaxTokens  int        `json:"max_tokens"`
		Messages   []message  `json:"messages"`
		Tools      []tool     `json:"tools"`
		ToolChoice toolChoice `json:"tool_choice"`
		Stream     bool       `json:"stream,omitzero"`
	}{Model: model, MaxTokens: 4096, Messages: []message{{"user", text}}, ToolChoice: toolChoice{"auto"}, Stream: stream}
	for _, t := range benchTools {
		body.Tools = append(body.Tools, tool{t.name, t.description, jsontext.Value(t.schema)})
	}
	return mustMarshal(body)
}

// converseBody is the Converse request the gateway makes of chatBody: the same text and
// tools, so the simulator gives the same answer.
func converseBody(text string) []byte {
	type inputSchema struct {
		JSON jsontext.Value `json:"json"`
	}
	type toolSpec struct {
		Name        string      `json:"name"`
		Description string      `json:"description"`
		InputSchema inputSchema `json:"inputSchema"`
	}
	type tool struct {
		ToolSpec toolSpec `json:"toolSpec"`
	}
	type block struct {
		Text string `json:"text"`
	}
	type message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	type toolConfig struct {
		Tools      []tool                    `json:"tools"`
		ToolChoice map[string]jsontext.Value `json:"toolChoice"`
	}
	body := struct {
		Messages   []message  `json:"messages"`
		ToolConfig toolConfig `json:"toolConfig"`
	}{
		Messages:   []message{{"user", []block{{text}}}},
		ToolConfig: toolConfig{ToolChoice: map[string]jsontext.Value{"auto": jsontext.Value(`{}`)}},
	}
	for _, t := range benchTools {
		body.ToolConfig.Tools = append(body.ToolConfig.Tools, tool{toolSpec{t.name, t.description, inputSchema{jsontext.Value(t.schema)}}})
	}
	return mustMarshal(body)
}

// mustMarshal encodes the fixed bodies above, which cannot fail to encode.
func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
