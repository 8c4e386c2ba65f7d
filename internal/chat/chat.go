// Package chat is the gateway's one model of a chat call: the request, the answer and the
// stream events that every surface (the Nirmata REST API, gRPC, and OpenAI's API) decodes
// its wire into and encodes its wire from. The translator reads a Request and the stream
// machine writes Events; no transport's types reach either.
//
// Values are kept as the client sent them: validating roles, part and tool types, tool
// names and argument JSON is the translator's work, so every surface gets the same checks
// and the same error texts, naming fields by the path the REST body has
// ("messages[1].tool_calls[0].function.arguments").
//
// The JSON names of the types are the chat model's JSON form, in which the audit trail
// keeps a call's request and answer and from which a call is replayed (docs/PROTOCOL.md
// 17); no client sends or reads it. A tool's parameters and a response format's schema
// are JSON text held as bytes: audit.EncodeContent writes them as JSON values.
package chat

// Roles a message may have (docs/PROTOCOL.md 3). developer is the same as system.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request is one chat call.
type Request struct {
	// ID identifies the call in logs and answers; the transport assigns it.
	ID string `json:"id,omitzero"`
	// Model is a Bedrock model id, inference-profile id, ARN or configured alias; empty
	// means the gateway's default.
	Model string `json:"model,omitzero"`
	// Provider is "bedrock" or empty; anything else is refused.
	Provider string `json:"provider,omitzero"`
	// ClientType labels the caller in logs and metrics.
	ClientType string `json:"client_type,omitzero"`
	// KeyID is the calling key's identity (empty without keys); the transport sets it.
	// What the gateway keeps for a caller, such as its reasoning blocks, is kept under it.
	KeyID string `json:"-"`
	// UserAgent is the client's User-Agent header (gRPC: user-agent metadata); the
	// transport sets it. With KeyID it names the client whose habits the gateway
	// remembers (docs/PROTOCOL.md 13.4).
	UserAgent string `json:"user_agent,omitzero"`

	Messages   []Message  `json:"messages,omitzero"`
	Tools      []Tool     `json:"tools,omitzero"`
	ToolChoice ToolChoice `json:"tool_choice,omitzero"`

	MaxTokens   *int32   `json:"max_tokens,omitzero"`
	Temperature *float64 `json:"temperature,omitzero"`
	TopP        *float64 `json:"top_p,omitzero"`
	Stop        []string `json:"stop,omitzero"`
	// TopK samples from the K likeliest tokens (Anthropic's top_k); the translator sends it
	// where the model takes it (docs/BEDROCK.md A21) and reports it dropped elsewhere.
	TopK *int32 `json:"top_k,omitzero"`
	// Betas are the anthropic-beta values the client asked for (Anthropic's Messages API);
	// the translator forwards those the target model takes as anthropic_beta and reports
	// the others dropped.
	Betas []string `json:"betas,omitzero"`

	// ParallelToolCalls false asks for one tool call per answer; nil leaves it to the
	// gateway (docs/PROTOCOL.md 13.4).
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitzero"`
	// MaxToolRounds bounds the tool rounds of the task: assistant turns with tool calls
	// after the last user message; nil is unlimited (docs/PROTOCOL.md 13.5).
	MaxToolRounds *int32 `json:"max_tool_rounds,omitzero"`

	// ReasoningEffort is none, minimal, low, medium, high, xhigh or max; empty leaves
	// thinking off (docs/PROTOCOL.md 11.1).
	ReasoningEffort string `json:"reasoning_effort,omitzero"`
	// Thinking is Anthropic's thinking switch; it wins over ReasoningEffort.
	Thinking *Thinking `json:"thinking,omitzero"`
	// StreamReasoning asks a JSONL or gRPC stream for reasoning events too (chunked and
	// OpenAI streams always carry them).
	StreamReasoning bool `json:"stream_reasoning,omitzero"`
	// ToolValidation is off, report or repair (docs/PROTOCOL.md 13.2); empty leaves it to
	// the gateway.
	ToolValidation string `json:"tool_validation,omitzero"`
	// ResponseFormat asks for structured output (docs/PROTOCOL.md 13.3); nil is text.
	ResponseFormat *ResponseFormat `json:"response_format,omitzero"`
	// CacheRetention is OpenAI's prompt_cache_retention: "24h" asks for the 1h TTL where
	// the model has it (docs/PROTOCOL.md 12.2).
	CacheRetention string `json:"cache_retention,omitzero"`

	// User identifies the end user, CacheKey the conversation's prompt-cache key; both go
	// to Bedrock's requestMetadata.
	User     string `json:"user,omitzero"`
	CacheKey string `json:"cache_key,omitzero"`
	// ServiceTier is Bedrock's service tier (priority, default, flex, reserved); empty
	// sends none.
	ServiceTier string `json:"service_tier,omitzero"`
	// Ignored lists the JSON paths of fields the transport accepted without effect; the
	// Result adds those the translator dropped.
	Ignored []string `json:"ignored,omitzero"`
}

// Message is one message of the history.
type Message struct {
	Role string `json:"role,omitzero"`
	// Content is the text; when Parts is not empty it is ignored.
	Content string `json:"content,omitzero"`
	Parts   []Part `json:"parts,omitzero"`
	// ToolCalls are an assistant message's calls.
	ToolCalls []ToolCall `json:"tool_calls,omitzero"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitzero"`
	// ToolError: the tool message reports that the call failed (Anthropic's is_error);
	// Bedrock gets the result with status error.
	ToolError bool `json:"tool_error,omitzero"`
	// Name is an optional participant or tool name.
	Name string `json:"name,omitzero"`
	// Reasoning is an assistant's reasoning blocks, sent back as an answer gave them
	// (docs/PROTOCOL.md 11.3).
	Reasoning []ReasoningBlock `json:"reasoning,omitzero"`
	// CacheControl asks for a prompt-cache point after the message (docs/PROTOCOL.md 12.1).
	CacheControl *CacheControl `json:"cache_control,omitzero"`
}

// Tool validation modes (docs/PROTOCOL.md 13.2).
const (
	ValidationOff    = "off"
	ValidationReport = "report"
	ValidationRepair = "repair"
)

// Response format types (docs/PROTOCOL.md 13.3).
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat is OpenAI's response_format.
type ResponseFormat struct {
	// Type is text, json_object or json_schema.
	Type string `json:"type,omitzero"`
	// Name, Description and Schema are json_schema's; Schema is the JSON Schema as JSON text
	// as the client wrote it.
	Name        string `json:"name,omitzero"`
	Description string `json:"description,omitzero"`
	Schema      []byte `json:"schema,omitzero"`
	// Strict is accepted and ignored.
	Strict bool `json:"strict,omitzero"`
}

// Thinking is Anthropic's extended-thinking switch.
type Thinking struct {
	// Type is enabled, adaptive or disabled.
	Type string `json:"type,omitzero"`
	// BudgetTokens is enabled's budget; nil when not given.
	BudgetTokens *int32 `json:"budget_tokens,omitzero"`
}

// Thinking types.
const (
	ThinkingEnabled  = "enabled"
	ThinkingAdaptive = "adaptive"
	ThinkingDisabled = "disabled"
)

// ReasoningBlock is one block of a model's reasoning, kept byte for byte: a thinking block
// (Text and Signature) or a redacted one (Data, base64 as Bedrock sent it).
type ReasoningBlock struct {
	// Redacted: a redacted_thinking block.
	Redacted  bool   `json:"redacted,omitzero"`
	Text      string `json:"text,omitzero"`
	Signature string `json:"signature,omitzero"`
	Data      string `json:"data,omitzero"`
}

// Replayable reports whether Bedrock can take the block back: a thinking block with its
// signature, or a redacted block with its data.
func (b *ReasoningBlock) Replayable() bool {
	if b.Redacted {
		return b.Data != ""
	}
	return b.Signature != ""
}

// CacheControl is a prompt-cache hint.
type CacheControl struct {
	// Type is ephemeral.
	Type string `json:"type,omitzero"`
	// TTL is "", 5m or 1h.
	TTL string `json:"ttl,omitzero"`
}

// Part types (docs/PROTOCOL.md 10.1). A part without a type is an image when it has one,
// else text.
const (
	PartText     = "text"
	PartImageURL = "image_url"
	PartFile     = "file"
	// PartRefusal is an assistant's refusal, sent back in history; it reads as text.
	PartRefusal = "refusal"
	// PartThinking and PartRedactedThinking are an assistant's reasoning blocks, sent back
	// in history.
	PartThinking         = "thinking"
	PartRedactedThinking = "redacted_thinking"
)

// Part is one content part.
type Part struct {
	Type string `json:"type,omitzero"`
	// Text is a text part's text, or a refusal part's refusal.
	Text string `json:"text,omitzero"`
	// Image is the image_url member: present (even empty) makes a typeless part an image.
	Image *ImageURL `json:"image,omitzero"`
	// File is the file member of a file part.
	File *File `json:"file,omitzero"`
	// Reasoning is a thinking or redacted_thinking part's block.
	Reasoning *ReasoningBlock `json:"reasoning,omitzero"`
	// CacheControl asks for a prompt-cache point right after the part.
	CacheControl *CacheControl `json:"cache_control,omitzero"`
}

// ImageURL is an image reference; the gateway accepts data URLs only.
type ImageURL struct {
	URL    string `json:"url,omitzero"`
	Detail string `json:"detail,omitzero"`
}

// File is a document given inline. The gateway stores no files, so FileID is only there
// to be refused by name.
type File struct {
	// Data is file_data: a data URL (data:application/pdf;base64,...) or bare base64.
	Data     string `json:"data,omitzero"`
	Filename string `json:"filename,omitzero"`
	FileID   string `json:"file_id,omitzero"`
}

// ToolCall is a call the model made: in a request's history, or in an answer.
type ToolCall struct {
	ID string `json:"id,omitzero"`
	// Type is "function" or empty in a request; answers always say "function".
	Type string `json:"type,omitzero"`
	Name string `json:"name,omitzero"`
	// Arguments is the JSON object text of the call's arguments.
	Arguments string `json:"arguments,omitzero"`
	// ValidationErrors says where an answer's call breaks its tool's schema
	// ("<JSON pointer>: <rule>", docs/PROTOCOL.md 13.2); nil when it does not or was not
	// checked.
	ValidationErrors []string `json:"validation_errors,omitzero"`
}

// Tool is a function the model may call.
type Tool struct {
	// Type is "function" or empty.
	Type        string `json:"type,omitzero"`
	Name        string `json:"name,omitzero"`
	Description string `json:"description,omitzero"`
	// Parameters is the JSON Schema of the arguments as JSON text, as the client wrote it;
	// nil means an object with no properties.
	Parameters []byte `json:"parameters,omitzero"`
	// Wrapped says the tool came in the {type, function} form, so errors name its fields
	// under "function" (tools[2].function.parameters).
	Wrapped bool `json:"wrapped,omitzero"`
	// CacheControl asks for a prompt-cache point after the tool.
	CacheControl *CacheControl `json:"cache_control,omitzero"`
	// CacheControlInFunction: a wrapped tool carried CacheControl inside function, so
	// errors name it tools[2].function.cache_control rather than tools[2].cache_control.
	CacheControlInFunction bool `json:"cache_control_in_function,omitzero"`
	// Strict asks for arguments that match Parameters exactly (docs/PROTOCOL.md 13.1).
	Strict bool `json:"strict,omitzero"`
}

// Tool choice modes.
const (
	ChoiceAuto     = "auto"
	ChoiceNone     = "none"
	ChoiceRequired = "required"
	// ChoiceFunction forces the tool named in ToolChoice.Function.
	ChoiceFunction = "function"
)

// ToolChoice says whether and which tool the model must call. The zero value leaves it to
// the model (Bedrock's default, auto).
type ToolChoice struct {
	// Mode is empty, or one of the Choice constants.
	Mode string `json:"mode,omitzero"`
	// Function is the client's tool name for ChoiceFunction.
	Function string `json:"function,omitzero"`
	// Allowed, when not nil, names the only tools the model may call (OpenAI's
	// allowed_tools); each must be in the request's tools.
	Allowed []string `json:"allowed,omitzero"`
}

// FinishReason says why the model stopped (docs/PROTOCOL.md 3.1).
type FinishReason string

// Finish reasons.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
)

// Usage counts tokens. Prompt tokens include those read from and written to the prompt
// cache (docs/BEDROCK.md D).
type Usage struct {
	PromptTokens     int32 `json:"prompt_tokens,omitzero"`
	CompletionTokens int32 `json:"completion_tokens,omitzero"`
	TotalTokens      int32 `json:"total_tokens,omitzero"`
	// CacheReadTokens and CacheWriteTokens are the prompt tokens read from and written to
	// the prompt cache.
	CacheReadTokens  int32 `json:"cache_read_tokens,omitzero"`
	CacheWriteTokens int32 `json:"cache_write_tokens,omitzero"`
}

// Response is a complete answer.
type Response struct {
	// Text is the model's text; empty when it wrote none.
	Text string `json:"text,omitzero"`
	// Reasoning is the model's reasoning blocks, in Bedrock's order.
	Reasoning []ReasoningBlock `json:"reasoning,omitzero"`
	ToolCalls []ToolCall       `json:"tool_calls,omitzero"`
	Finish    FinishReason     `json:"finish,omitzero"`
	Usage     Usage            `json:"usage,omitzero"`
	// StopReason is Bedrock's own stopReason.
	StopReason string `json:"stop_reason,omitzero"`
	// ServiceTier is the tier Bedrock says the call ran on; empty when it said none.
	ServiceTier string `json:"service_tier,omitzero"`
	// Model is the Bedrock model id that answered.
	Model string `json:"model,omitzero"`
	// LatencyMs is the time from the request to the answer.
	LatencyMs int64 `json:"latency_ms,omitzero"`
	// RequestID is the call's id.
	RequestID string `json:"request_id,omitzero"`
	// Ignored lists the request fields accepted without effect (core.Result.Ignored).
	Ignored []string `json:"ignored,omitzero"`
	// DroppedToolCalls counts the tool calls the model made that the answer leaves out:
	// all but the first when parallel tool calls are off, all when the tool budget is spent.
	DroppedToolCalls int `json:"dropped_tool_calls,omitzero"`
	// BudgetExhausted: the request's max_tool_rounds were spent, so the model was offered
	// no tools and the answer holds no tool calls.
	BudgetExhausted bool `json:"budget_exhausted,omitzero"`
	// Thinking says what happened to extended thinking (a Thinking outcome); empty when
	// nothing did.
	Thinking string `json:"thinking,omitzero"`
	// ToolValidation is "invalid" when calls are returned with validation errors,
	// "repaired" when the gateway had the model correct them; empty otherwise.
	ToolValidation string `json:"tool_validation,omitzero"`
	// AnswerID is the Bedrock toolUseId of the synthetic answer tool's call whose input
	// Text is (docs/PROTOCOL.md 13.3); empty when the answer came as text. Only the core
	// reads it: a repair (13.2) names that call by it.
	AnswerID string `json:"answer_id,omitzero"`
}

// Thinking outcomes (docs/PROTOCOL.md 11.4): the x-gateway-thinking header and
// metadata.thinking.
const (
	ThinkingRestored         = "restored"
	ThinkingMissingSignature = "disabled-missing-signature"
	ThinkingForcedToolChoice = "disabled-forced-tool-choice"
	ThinkingPrefill          = "disabled-prefill"
	// ThinkingFailover: the call failed over to another foundation model than the one
	// that answered the conversation, which the history's reasoning is bound to
	// (docs/PROTOCOL.md 14.4).
	ThinkingFailover = "disabled-failover"
)

// ReasoningText is the texts of blocks joined with newlines: an answer's reasoning.
func ReasoningText(blocks []ReasoningBlock) string {
	var n int
	for _, b := range blocks {
		n += len(b.Text) + 1
	}
	out := make([]byte, 0, n)
	for _, b := range blocks {
		if b.Redacted || b.Text == "" {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, b.Text...)
	}
	return string(out)
}

// EventKind tells what an Event carries.
type EventKind uint8

// Event kinds, in the order a stream produces them.
const (
	// EventContent: Text is a fragment of the answer's text.
	EventContent EventKind = iota + 1
	// EventToolCall: a piece of the tool call at Index. The first one of an index has
	// ToolCall.ID and ToolCall.Name and no arguments; later ones each carry a fragment of
	// ToolCall.Arguments. Concatenated, the fragments are the complete JSON object text.
	EventToolCall
	// EventToolCallEnd: the tool call at Index has all its arguments.
	EventToolCallEnd
	// EventDone: the answer is complete; Finish and Usage are set. It is the last event.
	EventDone
	// EventReasoning: Text is a fragment of reasoning text.
	EventReasoning
	// EventReasoningBlock: Block is a whole reasoning block, which just ended.
	EventReasoningBlock
)

// Event is one step of a streamed answer. A stream that fails after it started ends with
// an error instead of EventDone.
type Event struct {
	Kind EventKind
	// Text is the content fragment of EventContent.
	Text string
	// Answer: this EventContent fragment is the input of the synthetic answer tool
	// (docs/PROTOCOL.md 13.3), which the core holds while it is checked. Transports write
	// it as any content.
	Answer bool
	// Index is the tool call's ordinal in this answer (0, 1, 2 …), never Bedrock's block
	// index.
	Index    int
	ToolCall ToolCall
	Block    ReasoningBlock
	Finish   FinishReason
	// StopReason is Bedrock's stopReason of EventDone as sent ("end_turn",
	// "stop_sequence"): what tells a stop sequence met from the end of a turn, both Finish
	// "stop".
	StopReason string
	Usage      Usage
}
