package bedrock

import "encoding/json"

// The structs in this file mirror the REST JSON of Bedrock Runtime's Converse and
// ConverseStream operations (API version 2023-09-30). The generated aws-sdk-go-v2
// bedrockruntime types are the reference for names and shapes:
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
//
// Values the gateway only carries through (tool inputs, JSON tool results, tool schemas,
// additional model fields) are json.RawMessage: this package never decodes them, and
// MarshalRequest only compacts them (no HTML escaping), so the client's digits and key
// order reach Bedrock. (A schema a gRPC client sent only as a google.protobuf.Struct was
// float64 before it arrived; parameters_json avoids that.)

// ConverseRequest is the body of POST /model/{modelId}/converse and /converse-stream.
// The model id travels in the path, not in the body.
type ConverseRequest struct {
	Messages                     []Message        `json:"messages"`
	System                       []SystemBlock    `json:"system,omitempty"`
	InferenceConfig              *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig                   *ToolConfig      `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields json.RawMessage  `json:"additionalModelRequestFields,omitempty"`
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
	Text       *string          `json:"text,omitempty"`
	Image      *ImageBlock      `json:"image,omitempty"`
	ToolUse    *ToolUseBlock    `json:"toolUse,omitempty"`
	ToolResult *ToolResultBlock `json:"toolResult,omitempty"`
	CachePoint *CachePoint      `json:"cachePoint,omitempty"`
	// ReasoningContent is carried through untouched (extended thinking).
	ReasoningContent json.RawMessage `json:"reasoningContent,omitempty"`
}

// TextBlock returns a content block holding text.
func TextBlock(s string) ContentBlock { return ContentBlock{Text: &s} }

// SystemBlock is a member of the top-level system array.
type SystemBlock struct {
	Text       string      `json:"text,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
}

// CachePoint marks a prompt-caching checkpoint.
type CachePoint struct {
	Type string `json:"type"`
}

// ImageBlock is an image given inline.
type ImageBlock struct {
	// Format is png, jpeg, gif or webp.
	Format string      `json:"format"`
	Source ImageSource `json:"source"`
}

// ImageSource holds the image bytes; encoding/json writes them as base64, as Bedrock wants.
type ImageSource struct {
	Bytes []byte `json:"bytes"`
}

// ToolUseBlock is a tool call made by the model.
type ToolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
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
	Text  *string         `json:"text,omitempty"`
	JSON  json.RawMessage `json:"json,omitempty"`
	Image *ImageBlock     `json:"image,omitempty"`
}

// InferenceConfig holds the common inference parameters.
type InferenceConfig struct {
	MaxTokens     *int32   `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig declares the tools the model may call.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
}

// Tool is a union: a toolSpec or a cachePoint.
type Tool struct {
	ToolSpec   *ToolSpec   `json:"toolSpec,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
}

// ToolSpec describes one tool.
type ToolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema InputSchema `json:"inputSchema"`
}

// InputSchema holds the JSON Schema of a tool's input.
type InputSchema struct {
	JSON json.RawMessage `json:"json"`
}

// ToolChoice is a union: auto, any or tool. Bedrock has no "none".
type ToolChoice struct {
	Auto *struct{}           `json:"auto,omitempty"`
	Any  *struct{}           `json:"any,omitempty"`
	Tool *SpecificToolChoice `json:"tool,omitempty"`
}

// SpecificToolChoice forces one named tool.
type SpecificToolChoice struct {
	Name string `json:"name"`
}

// ConverseResponse is the body of a successful Converse call.
type ConverseResponse struct {
	Output     *ConverseOutput `json:"output,omitempty"`
	StopReason string          `json:"stopReason"`
	Usage      *TokenUsage     `json:"usage,omitempty"`
	Metrics    *Metrics        `json:"metrics,omitempty"`
}

// ConverseOutput is a union; Bedrock only sends message.
type ConverseOutput struct {
	Message *Message `json:"message,omitempty"`
}

// TokenUsage counts tokens. Cache counts are only sent when prompt caching is used.
type TokenUsage struct {
	InputTokens           int32 `json:"inputTokens"`
	OutputTokens          int32 `json:"outputTokens"`
	TotalTokens           int32 `json:"totalTokens"`
	CacheReadInputTokens  int32 `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int32 `json:"cacheWriteInputTokens,omitempty"`
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
	ToolUse *ToolUseBlockStart `json:"toolUse,omitempty"`
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
	Text             *string         `json:"text,omitempty"`
	ToolUse          *ToolUseDelta   `json:"toolUse,omitempty"`
	ReasoningContent json.RawMessage `json:"reasoningContent,omitempty"`
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
	StopReason                    string          `json:"stopReason"`
	AdditionalModelResponseFields json.RawMessage `json:"additionalModelResponseFields,omitempty"`
}

// MetadataEvent is the last event: usage and metrics.
type MetadataEvent struct {
	Usage   *TokenUsage `json:"usage,omitempty"`
	Metrics *Metrics    `json:"metrics,omitempty"`
}

// ErrorBody is the JSON body of an error answer and the payload of an in-stream exception.
type ErrorBody struct {
	Message string `json:"message"`
}
