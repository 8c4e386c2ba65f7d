package bedrock

import "github.com/go-json-experiment/json/jsontext"

// The structs in this file mirror the REST JSON of Bedrock Runtime's Converse and
// ConverseStream operations (API version 2023-09-30). The generated aws-sdk-go-v2
// bedrockruntime types are the reference for names and shapes:
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
//
// They are encoded and decoded with json/v2 (github.com/go-json-experiment/json), which does
// not HTML-escape, so "<", ">" and "&" in prompts reach the model as written. Optional
// members are pointers tagged omitzero: json/v2's omitempty looks at the JSON value, so it
// would also drop a present {} (toolChoice.auto) or "". Values the gateway only carries
// through (tool inputs, JSON tool results, tool schemas, additional model fields) are
// jsontext.Value: never decoded, so the client's digits and key order reach Bedrock.

// ConverseRequest is the body of POST /model/{modelId}/converse and /converse-stream.
// The model id travels in the path, not in the body.
type ConverseRequest struct {
	Messages                     []Message        `json:"messages"`
	System                       []SystemBlock    `json:"system,omitempty"`
	InferenceConfig              *InferenceConfig `json:"inferenceConfig,omitzero"`
	ToolConfig                   *ToolConfig      `json:"toolConfig,omitzero"`
	AdditionalModelRequestFields jsontext.Value   `json:"additionalModelRequestFields,omitzero"`
	// RequestMetadata is filterable in Bedrock's invocation logs.
	RequestMetadata map[string]string `json:"requestMetadata,omitempty"`
	ServiceTier     *ServiceTier      `json:"serviceTier,omitzero"`
	// OutputConfig holds the answer to a schema (docs/BEDROCK.md I).
	OutputConfig *OutputConfig `json:"outputConfig,omitzero"`
}

// countTokensRequest is the body of CountTokens for a Converse request:
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html
type countTokensRequest struct {
	Input countTokensInput `json:"input"`
}

// countTokensInput is a union; the gateway counts Converse requests only.
type countTokensInput struct {
	Converse converseTokens `json:"converse"`
}

// converseTokens is what CountTokens counts of a Converse request.
type converseTokens struct {
	Messages                     []Message      `json:"messages"`
	System                       []SystemBlock  `json:"system,omitempty"`
	ToolConfig                   *ToolConfig    `json:"toolConfig,omitzero"`
	AdditionalModelRequestFields jsontext.Value `json:"additionalModelRequestFields,omitzero"`
}

// countTokensResponse is the body of a successful CountTokens call.
type countTokensResponse struct {
	InputTokens int32 `json:"inputTokens"`
}

// OutputConfig shapes the model's answer:
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_OutputConfig.html
type OutputConfig struct {
	TextFormat *OutputFormat `json:"textFormat,omitzero"`
}

// OutputFormat is the format of the answer's text.
type OutputFormat struct {
	// Type is "json_schema", the only type.
	Type      string                `json:"type"`
	Structure OutputFormatStructure `json:"structure"`
}

// OutputFormatTypeJSONSchema is the one OutputFormat type.
const OutputFormatTypeJSONSchema = "json_schema"

// OutputFormatStructure is a union with one member.
type OutputFormatStructure struct {
	JSONSchema *JSONSchemaDefinition `json:"jsonSchema,omitzero"`
}

// JSONSchemaDefinition is the schema the answer must match.
type JSONSchemaDefinition struct {
	// Schema is the JSON Schema as a JSON string, not an object.
	Schema      string `json:"schema"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// ServiceTier chooses the capacity a call runs on, and says which one an answer ran on.
type ServiceTier struct {
	// Type is priority, default, flex or reserved.
	Type string `json:"type"`
}

// Roles of a Converse message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is a union: exactly one member is set. Text is a pointer so that an empty
// text block ({"text":""}) can be told apart from an absent one.
type ContentBlock struct {
	Text       *string          `json:"text,omitzero"`
	Image      *ImageBlock      `json:"image,omitzero"`
	Document   *DocumentBlock   `json:"document,omitzero"`
	ToolUse    *ToolUseBlock    `json:"toolUse,omitzero"`
	ToolResult *ToolResultBlock `json:"toolResult,omitzero"`
	CachePoint *CachePoint      `json:"cachePoint,omitzero"`
	// ReasoningContent is a block of the model's reasoning (extended thinking).
	ReasoningContent *ReasoningContentBlock `json:"reasoningContent,omitzero"`
}

// ReasoningContentBlock is a union: the reasoning text with its signature, or a redacted
// block. Both go back to the model exactly as it wrote them, so redacted content stays the
// base64 text Bedrock sent rather than bytes re-encoded.
type ReasoningContentBlock struct {
	ReasoningText   *ReasoningText `json:"reasoningText,omitzero"`
	RedactedContent string         `json:"redactedContent,omitempty"`
}

// ReasoningText is reasoning the model wrote; Signature proves it unaltered.
type ReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// TextBlock returns a content block holding text.
func TextBlock(s string) ContentBlock { return ContentBlock{Text: &s} }

// SystemBlock is a member of the top-level system array.
type SystemBlock struct {
	Text       string      `json:"text,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitzero"`
}

// CachePoint marks a prompt-caching checkpoint (docs/BEDROCK.md H): everything before it,
// tools then system then messages, is cached.
type CachePoint struct {
	// Type is "default".
	Type string `json:"type"`
	// TTL is "5m" or "1h"; empty is Bedrock's default, five minutes.
	TTL string `json:"ttl,omitempty"`
}

// CachePointDefault is the one type of CachePoint.
const CachePointDefault = "default"

// ImageBlock is an image given inline.
type ImageBlock struct {
	// Format is png, jpeg, gif or webp.
	Format string      `json:"format"`
	Source ImageSource `json:"source"`
}

// ImageSource holds the image bytes; json/v2 writes []byte as base64, as Bedrock wants.
type ImageSource struct {
	Bytes []byte `json:"bytes"`
}

// DocumentBlock is a document given inline (docs/BEDROCK.md K).
type DocumentBlock struct {
	// Format is pdf, csv, doc, docx, xls, xlsx, html, txt or md.
	Format string `json:"format"`
	// Name is 1–200 characters of letters, digits, single spaces, hyphens, parentheses and
	// square brackets, unique in the conversation; the model reads it.
	Name   string         `json:"name"`
	Source DocumentSource `json:"source"`
}

// DocumentSource holds the document bytes, written as base64 like ImageSource's.
type DocumentSource struct {
	Bytes []byte `json:"bytes"`
}

// ToolUseBlock is a tool call made by the model.
type ToolUseBlock struct {
	ToolUseID string         `json:"toolUseId"`
	Name      string         `json:"name"`
	Input     jsontext.Value `json:"input"`
}

// ToolResultBlock answers a ToolUseBlock of the previous assistant turn.
type ToolResultBlock struct {
	ToolUseID string                   `json:"toolUseId"`
	Content   []ToolResultContentBlock `json:"content"`
	// Status is "success", "error" or empty.
	Status string `json:"status,omitempty"`
}

// Tool result statuses.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// ToolResultContentBlock is a union: text, json (must be an object) or image.
type ToolResultContentBlock struct {
	Text  *string        `json:"text,omitzero"`
	JSON  jsontext.Value `json:"json,omitzero"`
	Image *ImageBlock    `json:"image,omitzero"`
}

// InferenceConfig holds the common inference parameters.
type InferenceConfig struct {
	MaxTokens     *int32   `json:"maxTokens,omitzero"`
	Temperature   *float64 `json:"temperature,omitzero"`
	TopP          *float64 `json:"topP,omitzero"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig declares the tools the model may call.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitzero"`
}

// Tool is a union: a toolSpec or a cachePoint.
type Tool struct {
	ToolSpec   *ToolSpec   `json:"toolSpec,omitzero"`
	CachePoint *CachePoint `json:"cachePoint,omitzero"`
}

// ToolSpec describes one tool.
type ToolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema InputSchema `json:"inputSchema"`
	// Strict constrains the tool's input to its schema, on the models that have it
	// (docs/BEDROCK.md I5).
	Strict bool `json:"strict,omitzero"`
}

// InputSchema holds the JSON Schema of a tool's input.
type InputSchema struct {
	JSON jsontext.Value `json:"json"`
}

// ToolChoice is a union: auto, any or tool. Bedrock has no "none".
type ToolChoice struct {
	Auto *struct{}           `json:"auto,omitzero"`
	Any  *struct{}           `json:"any,omitzero"`
	Tool *SpecificToolChoice `json:"tool,omitzero"`
}

// SpecificToolChoice forces one named tool.
type SpecificToolChoice struct {
	Name string `json:"name"`
}

// ConverseResponse is the body of a successful Converse call.
type ConverseResponse struct {
	Output      *ConverseOutput `json:"output,omitzero"`
	StopReason  string          `json:"stopReason"`
	Usage       *TokenUsage     `json:"usage,omitzero"`
	Metrics     *Metrics        `json:"metrics,omitzero"`
	ServiceTier *ServiceTier    `json:"serviceTier,omitzero"`
}

// ConverseOutput is a union; Bedrock only sends message.
type ConverseOutput struct {
	Message *Message `json:"message,omitzero"`
}

// TokenUsage counts tokens. Cache counts are only sent when prompt caching is used.
type TokenUsage struct {
	InputTokens           int32 `json:"inputTokens"`
	OutputTokens          int32 `json:"outputTokens"`
	TotalTokens           int32 `json:"totalTokens"`
	CacheReadInputTokens  int32 `json:"cacheReadInputTokens,omitzero"`
	CacheWriteInputTokens int32 `json:"cacheWriteInputTokens,omitzero"`
}

// Metrics reports the upstream latency.
type Metrics struct {
	LatencyMs int64 `json:"latencyMs"`
}

// Stop reasons Bedrock reports.
const (
	StopEndTurn                    = "end_turn"
	StopToolUse                    = "tool_use"
	StopMaxTokens                  = "max_tokens"
	StopStopSequence               = "stop_sequence"
	StopGuardrailIntervened        = "guardrail_intervened"
	StopContentFiltered            = "content_filtered"
	StopModelContextWindowExceeded = "model_context_window_exceeded"
	StopMalformedModelOutput       = "malformed_model_output"
	StopMalformedToolUse           = "malformed_tool_use"
)

// ConverseStream event types, as sent in the :event-type header.
const (
	EventMessageStart      = "messageStart"
	EventContentBlockStart = "contentBlockStart"
	EventContentBlockDelta = "contentBlockDelta"
	EventContentBlockStop  = "contentBlockStop"
	EventMessageStop       = "messageStop"
	EventMetadata          = "metadata"
)

// StreamEvent is one decoded ConverseStream event: Type is the :event-type header and
// exactly the matching field is set.
type StreamEvent struct {
	Type              string
	MessageStart      *MessageStartEvent
	ContentBlockStart *ContentBlockStartEvent
	ContentBlockDelta *ContentBlockDeltaEvent
	ContentBlockStop  *ContentBlockStopEvent
	MessageStop       *MessageStopEvent
	Metadata          *MetadataEvent
}

// MessageStartEvent opens the assistant message.
type MessageStartEvent struct {
	Role string `json:"role"`
}

// ContentBlockStartEvent opens a block; Bedrock only sends it for toolUse blocks.
type ContentBlockStartEvent struct {
	ContentBlockIndex int               `json:"contentBlockIndex"`
	Start             ContentBlockStart `json:"start"`
}

// ContentBlockStart is a union; the gateway uses toolUse.
type ContentBlockStart struct {
	ToolUse *ToolUseBlockStart `json:"toolUse,omitzero"`
}

// ToolUseBlockStart names the tool call a block holds.
type ToolUseBlockStart struct {
	ToolUseID string `json:"toolUseId"`
	Name      string `json:"name"`
}

// ContentBlockDeltaEvent carries a fragment of a block.
type ContentBlockDeltaEvent struct {
	ContentBlockIndex int               `json:"contentBlockIndex"`
	Delta             ContentBlockDelta `json:"delta"`
}

// ContentBlockDelta is a union: text, toolUse input fragment, or reasoning.
type ContentBlockDelta struct {
	Text             *string         `json:"text,omitzero"`
	ToolUse          *ToolUseDelta   `json:"toolUse,omitzero"`
	ReasoningContent *ReasoningDelta `json:"reasoningContent,omitzero"`
}

// ReasoningDelta is a union: a fragment of reasoning text, the block's signature (sent once,
// before the block stops), or a redacted block whole.
type ReasoningDelta struct {
	Text            *string `json:"text,omitzero"`
	Signature       *string `json:"signature,omitzero"`
	RedactedContent *string `json:"redactedContent,omitzero"`
}

// ToolUseDelta is a fragment of a tool call's input JSON text.
type ToolUseDelta struct {
	Input string `json:"input"`
}

// ContentBlockStopEvent closes a block.
type ContentBlockStopEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
}

// MessageStopEvent closes the message and tells why.
type MessageStopEvent struct {
	StopReason                    string         `json:"stopReason"`
	AdditionalModelResponseFields jsontext.Value `json:"additionalModelResponseFields,omitzero"`
}

// MetadataEvent is the last event: usage and metrics.
type MetadataEvent struct {
	Usage   *TokenUsage `json:"usage,omitzero"`
	Metrics *Metrics    `json:"metrics,omitzero"`
}

// ErrorBody is the JSON body of an error answer and the payload of an in-stream exception.
type ErrorBody struct {
	Message string `json:"message"`
}
