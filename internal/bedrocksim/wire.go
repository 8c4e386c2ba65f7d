package bedrocksim

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The structs in this file mirror the JSON of Bedrock Runtime's Converse and ConverseStream
// (API version 2023-09-30; the names and shapes are the service model's, as aws-sdk-go-v2's
// bedrockruntime types spell them). They hold only what the simulator reads or writes: the
// other members a request may carry (video, guardContent, …) are accepted by
// checkRaw (validate_raw.go) and ignored when decoding.
//
// Union members are pointers, so an absent member is nil; checkRaw has already made sure a
// union holds exactly one. Tool inputs, JSON tool results and tool schemas are raw JSON
// (jsontext.Value): the simulator never decodes them into Go numbers, so what it echoes back
// keeps the client's digits.

// converseRequest is the body of POST /model/{modelId}/converse and /converse-stream.
type converseRequest struct {
	Messages        []message               `json:"messages"`
	System          []systemContentBlock    `json:"system"`
	InferenceConfig *inferenceConfiguration `json:"inferenceConfig"`
	ToolConfig      *toolConfiguration      `json:"toolConfig"`
	// AdditionalModelRequestFields is passed to the model; the simulator reads Claude's
	// tool_choice (docs/BEDROCK.md J1), each family's reasoning switches (G) and Claude's
	// output_config.format (I4) from it.
	AdditionalModelRequestFields jsontext.Value `json:"additionalModelRequestFields"`
	// OutputConfig asks for structured output (docs/BEDROCK.md I1).
	OutputConfig *outputConfiguration `json:"outputConfig"`

	// anthropicChoice is AdditionalModelRequestFields.tool_choice as validate read it on a
	// Claude model; nil when absent or on other models.
	anthropicChoice *anthropicChoice
	// redactThinking: the redacted_thinking fault applies to this request.
	redactThinking bool
	// thinking is what validate read of the reasoning switches.
	thinking thinking
	// cache is the request laid out for the prompt cache, as validate checked it.
	cache cacheWalk
	// format is the JSON schema (an object) the answer's text follows: that of
	// outputConfig.textFormat, or of Claude's output_config.format; nil without structured
	// output.
	format jsontext.Value
}

// Roles of a message.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
)

// message is one turn, of the request's conversation or of the answer.
type message struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is a union. Text is a pointer so that {"text":""} is told from no text.
// Other holds the members the simulator does not read (video, guardContent, …), so that a
// block marshals back whole: the prompt cache's keys are made of marshalled blocks.
type contentBlock struct {
	Text             *string                `json:"text,omitzero"`
	Image            *imageBlock            `json:"image,omitzero"`
	Document         *documentBlock         `json:"document,omitzero"`
	ToolUse          *toolUseBlock          `json:"toolUse,omitzero"`
	ToolResult       *toolResultBlock       `json:"toolResult,omitzero"`
	CachePoint       *cachePointBlock       `json:"cachePoint,omitzero"`
	ReasoningContent *reasoningContentBlock `json:"reasoningContent,omitzero"`
	Other            jsontext.Value         `json:",embed"`
}

// systemContentBlock is a union of text, guardContent and cachePoint.
type systemContentBlock struct {
	Text       *string          `json:"text,omitzero"`
	CachePoint *cachePointBlock `json:"cachePoint,omitzero"`
	Other      jsontext.Value   `json:",embed"`
}

// cachePointBlock marks the end of a prefix to cache (docs/BEDROCK.md H).
type cachePointBlock struct {
	Type string `json:"type"`         // "default"
	TTL  string `json:"ttl,omitzero"` // "5m" (also when absent) or "1h"
}

// Cache point TTLs.
const (
	ttl5m = "5m"
	ttl1h = "1h"
)

// reasoningContentBlock is a union: the model's reasoning with its signature, or reasoning
// the provider encrypted (docs/BEDROCK.md G6).
type reasoningContentBlock struct {
	ReasoningText   *reasoningTextBlock `json:"reasoningText,omitzero"`
	RedactedContent []byte              `json:"redactedContent,omitzero"` // base64 in JSON
}

// reasoningTextBlock's Text is always sent, empty too: Opus 4.7 answers blocks with empty
// text and only a signature (G6).
type reasoningTextBlock struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitzero"`
}

type imageBlock struct {
	Format string      `json:"format"` // png, jpeg, gif or webp
	Source imageSource `json:"source"`
}

// imageSource holds the image inline, as base64 in JSON.
type imageSource struct {
	Bytes []byte `json:"bytes"`
}

// documentBlock is a document given inline; the simulator reads only bytes sources.
type documentBlock struct {
	Format string         `json:"format"` // pdf, csv, doc, docx, xls, xlsx, html, txt or md
	Name   string         `json:"name"`
	Source documentSource `json:"source"`
}

type documentSource struct {
	Bytes []byte `json:"bytes"`
}

type toolUseBlock struct {
	ToolUseID string         `json:"toolUseId"`
	Name      string         `json:"name"`
	Input     jsontext.Value `json:"input"`
}

type toolResultBlock struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []toolResultContent `json:"content"`
	Status    string              `json:"status"` // "success", "error" or absent
}

// Tool result statuses.
const (
	statusSuccess = "success"
	statusError   = "error"
)

// toolResultContent is a union; JSON must be an object (A17).
type toolResultContent struct {
	Text  *string        `json:"text"`
	JSON  jsontext.Value `json:"json"`
	Image *imageBlock    `json:"image"`
}

type inferenceConfiguration struct {
	MaxTokens     *int32   `json:"maxTokens"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"topP"`
	StopSequences []string `json:"stopSequences"`
}

type toolConfiguration struct {
	Tools      []toolEntry `json:"tools"`
	ToolChoice *toolChoice `json:"toolChoice"`
}

// toolEntry is a member of toolConfig.tools (the service model's Tool), a union: a toolSpec
// or a cachePoint (or a systemTool, kept in Other).
type toolEntry struct {
	ToolSpec   *toolSpecification `json:"toolSpec,omitzero"`
	CachePoint *cachePointBlock   `json:"cachePoint,omitzero"`
	Other      jsontext.Value     `json:",embed"`
}

// toolSpecification's Description is a pointer: present but empty is refused (A10), absent is
// fine. Strict asks for calls held to the schema (docs/BEDROCK.md I5).
type toolSpecification struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitzero"`
	InputSchema toolInputSchema `json:"inputSchema"`
	Strict      *bool           `json:"strict,omitzero"`
	Other       jsontext.Value  `json:",embed"`
}

// strict reports whether the tool asks for strict calls.
func (s *toolSpecification) strict() bool { return s.Strict != nil && *s.Strict }

type toolInputSchema struct {
	JSON jsontext.Value `json:"json"`
}

// toolChoice is a union: auto, any or tool.
type toolChoice struct {
	Auto *struct{}           `json:"auto"`
	Any  *struct{}           `json:"any"`
	Tool *specificToolChoice `json:"tool"`
}

type specificToolChoice struct {
	Name string `json:"name"`
}

// outputConfiguration is the service model's OutputConfig: structured output (textFormat)
// and an effort, which the simulator does not read (docs/BEDROCK.md G5).
type outputConfiguration struct {
	TextFormat *outputFormat `json:"textFormat,omitzero"`
	Effort     *string       `json:"effort,omitzero"`
}

// outputFormat asks for text that follows a JSON schema (docs/BEDROCK.md I1); json_schema is
// the only type.
type outputFormat struct {
	Type      string                `json:"type"`
	Structure outputFormatStructure `json:"structure"`
}

// outputFormatStructure is a union of which jsonSchema is the only member.
type outputFormatStructure struct {
	JSONSchema *jsonSchemaDefinition `json:"jsonSchema,omitzero"`
}

// jsonSchemaDefinition's Schema is the schema as a JSON string, not an object (I1).
type jsonSchemaDefinition struct {
	Schema      string  `json:"schema"`
	Name        *string `json:"name,omitzero"`
	Description *string `json:"description,omitzero"`
}

// The output format type Converse takes.
const formatJSONSchema = "json_schema"

// converseResponse is the body of a successful Converse call.
type converseResponse struct {
	Output     converseOutput `json:"output"`
	StopReason string         `json:"stopReason"`
	Usage      tokenUsage     `json:"usage"`
	Metrics    metrics        `json:"metrics"`
}

// converseOutput is a union of which Bedrock only sends message.
type converseOutput struct {
	Message message `json:"message"`
}

// tokenUsage counts tokens; inputTokens leaves out what the prompt cache read and wrote,
// totalTokens counts everything (docs/BEDROCK.md H9). The cache members are left out when
// zero.
type tokenUsage struct {
	InputTokens           int32         `json:"inputTokens"`
	OutputTokens          int32         `json:"outputTokens"`
	TotalTokens           int32         `json:"totalTokens"`
	CacheReadInputTokens  int32         `json:"cacheReadInputTokens,omitzero"`
	CacheWriteInputTokens int32         `json:"cacheWriteInputTokens,omitzero"`
	CacheDetails          []cacheDetail `json:"cacheDetails,omitzero"`
}

// cacheDetail is the part of cacheWriteInputTokens written with one TTL.
type cacheDetail struct {
	TTL         string `json:"ttl"`
	InputTokens int32  `json:"inputTokens"`
}

type metrics struct {
	LatencyMs int64 `json:"latencyMs"`
}

// Stop reasons the simulator answers with.
const (
	stopEndTurn   = "end_turn"
	stopToolUse   = "tool_use"
	stopMaxTokens = "max_tokens"
)

// ConverseStream events, by their :event-type header.
const (
	eventMessageStart      = "messageStart"
	eventContentBlockStart = "contentBlockStart"
	eventContentBlockDelta = "contentBlockDelta"
	eventContentBlockStop  = "contentBlockStop"
	eventMessageStop       = "messageStop"
	eventMetadata          = "metadata"
)

type messageStartEvent struct {
	Role string `json:"role"`
}

// contentBlockStartEvent opens a block; Bedrock sends it for toolUse blocks only.
type contentBlockStartEvent struct {
	ContentBlockIndex int               `json:"contentBlockIndex"`
	Start             contentBlockStart `json:"start"`
}

type contentBlockStart struct {
	ToolUse toolUseStart `json:"toolUse"`
}

type toolUseStart struct {
	ToolUseID string `json:"toolUseId"`
	Name      string `json:"name"`
}

type contentBlockDeltaEvent struct {
	ContentBlockIndex int               `json:"contentBlockIndex"`
	Delta             contentBlockDelta `json:"delta"`
}

// contentBlockDelta is a union: a piece of text, a piece of a tool call's input JSON text, or
// a piece of reasoning.
type contentBlockDelta struct {
	Text             *string         `json:"text,omitzero"`
	ToolUse          *toolUseDelta   `json:"toolUse,omitzero"`
	ReasoningContent *reasoningDelta `json:"reasoningContent,omitzero"`
}

// reasoningDelta is a union: a piece of reasoning text, the block's signature (sent once,
// after the text), or a redacted block whole (docs/BEDROCK.md G6).
type reasoningDelta struct {
	Text            *string `json:"text,omitzero"`
	Signature       *string `json:"signature,omitzero"`
	RedactedContent []byte  `json:"redactedContent,omitzero"`
}

type toolUseDelta struct {
	Input string `json:"input"`
}

type contentBlockStopEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
}

type messageStopEvent struct {
	StopReason string `json:"stopReason"`
}

// metadataEvent comes last, after the stop reason.
type metadataEvent struct {
	Usage   tokenUsage `json:"usage"`
	Metrics metrics    `json:"metrics"`
}

// errorBody is the body of an error answer and the payload of an in-stream exception.
type errorBody struct {
	Message string `json:"message"`
}

// lenient are the options every read and write of JSON uses. Duplicate keys and invalid
// UTF-8 pass, as they did when the simulator used encoding/json (the last key wins, bad bytes
// become U+FFFD): section A records no Bedrock answer to them, and refusing them would fail a
// request on a rule of the simulator's own.
var lenient = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// marshal encodes v. The values marshalled here cannot fail to encode.
func marshal(v any) []byte {
	b, _ := json.Marshal(v, lenient)
	return b
}
