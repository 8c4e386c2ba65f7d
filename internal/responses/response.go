package responses

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/openai"
)

// The response object of docs/PROTOCOL.md 16, in OpenAI's key order, as openai-go's
// responses.Response reads it; encoded by chatjson.Append.
type response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int32             `json:"max_output_tokens"`
	MaxToolCalls       *int32             `json:"max_tool_calls"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	Reasoning          reasoningEcho      `json:"reasoning"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	ServiceTier        string             `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               jsontext.Value     `json:"text"`
	ToolChoice         jsontext.Value     `json:"tool_choice"`
	Tools              jsontext.Value     `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *usage             `json:"usage"`
	User               *string            `json:"user"`
	Metadata           jsontext.Value     `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type reasoningEcho struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type usage struct {
	InputTokens         int32        `json:"input_tokens"`
	InputTokensDetails  inputDetail  `json:"input_tokens_details"`
	OutputTokens        int32        `json:"output_tokens"`
	OutputTokensDetails outputDetail `json:"output_tokens_details"`
	TotalTokens         int32        `json:"total_tokens"`
}

type inputDetail struct {
	CachedTokens int32 `json:"cached_tokens"`
}

// outputDetail: Bedrock does not count reasoning tokens apart, so reasoning_tokens is 0.
type outputDetail struct {
	ReasoningTokens int32 `json:"reasoning_tokens"`
}

func usageOf(u chat.Usage) *usage {
	return &usage{
		InputTokens: u.PromptTokens, InputTokensDetails: inputDetail{CachedTokens: u.CacheReadTokens},
		OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
	}
}

// Output items.

type messageItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
}

func newOutputText(text string) outputText {
	return outputText{Type: outputTextPart, Text: text, Annotations: []struct{}{}, Logprobs: []struct{}{}}
}

type reasoningItem struct {
	Type    string        `json:"type"`
	ID      string        `json:"id"`
	Summary []summaryText `json:"summary"`
	// EncryptedContent is sealed, its blocks, when include asked for it.
	EncryptedContent string `json:"encrypted_content,omitempty"`
	// sealed is its blocks sealed whatever include asked, for a stored response.
	sealed string
}

type summaryText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type customCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Input     string `json:"input"`
}

// toolSearchCallItem is a call of the client-run tool_search, its arguments an object.
type toolSearchCallItem struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	CallID    string         `json:"call_id"`
	Status    string         `json:"status"`
	Execution string         `json:"execution"`
	Arguments jsontext.Value `json:"arguments"`
}

// A response's and an item's statuses, and why a response is incomplete.
const (
	statusCompleted     = "completed"
	statusInProgress    = "in_progress"
	statusIncomplete    = "incomplete"
	statusFailed        = "failed"
	reasonMaxTokens     = "max_output_tokens"
	reasonContentFilter = "content_filter"
)

// Item id prefixes.
const (
	prefixMessage   = "msg"
	prefixReasoning = "rs"
	prefixFunction  = "fc"
	prefixCustom    = "ctc"
	prefixSearch    = "tsc"
)

// head is what identifies one call's response.
type head struct {
	requestID string
	createdAt int64
	model     string
}

// itemID is the id of the output item at index: unique in the response, the same in its
// stream and its whole form.
func (h *head) itemID(prefix string, index int) string {
	return prefix + "_" + h.requestID + "_" + strconv.Itoa(index)
}

// response is the response object without its output, status in_progress.
func (c *call) response(h *head) response {
	e := &c.echo
	r := response{
		ID: "resp_" + h.requestID, Object: "response", CreatedAt: h.createdAt, Status: statusInProgress,
		Instructions: e.instructions, MaxOutputTokens: e.maxOutputTokens, MaxToolCalls: e.maxToolCalls,
		Model: h.model, Output: []any{}, ParallelToolCalls: e.parallelToolCalls,
		PreviousResponseID: optional(e.previousResponseID), PromptCacheKey: optional(e.promptCacheKey),
		Reasoning:        reasoningEcho{Effort: optional(e.effort), Summary: optional(e.summary)},
		SafetyIdentifier: optional(e.safetyID), ServiceTier: e.serviceTier, Store: e.store,
		Temperature: 1, Text: e.text, ToolChoice: e.toolChoice, Tools: e.tools, TopP: 1,
		Truncation: e.truncation, User: optional(e.user), Metadata: e.metadata,
	}
	if e.temperature != nil {
		r.Temperature = *e.temperature
	}
	if e.topP != nil {
		r.TopP = *e.topP
	}
	if r.ServiceTier == "" {
		r.ServiceTier = "auto"
	}
	if r.Truncation == "" {
		r.Truncation = defaultTruncation
	}
	if len(r.Text) == 0 || r.Text.Kind() != '{' {
		r.Text = defaultText
	}
	if len(r.ToolChoice) == 0 {
		r.ToolChoice = defaultToolChoice
	}
	if len(r.Tools) == 0 || r.Tools.Kind() != '[' {
		r.Tools = emptyList
	}
	if len(r.Metadata) == 0 {
		r.Metadata = emptyObject
	}
	return r
}

var (
	defaultText       = jsontext.Value(`{"format":{"type":"text"}}`)
	defaultToolChoice = jsontext.Value(`"auto"`)
	emptyList         = jsontext.Value(`[]`)
	emptyObject       = jsontext.Value(`{}`)
)

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// finish sets the response's status, usage and the tier of the answer.
func (r *response) finish(f chat.FinishReason, u chat.Usage, tier string) {
	r.Status = statusCompleted
	switch f {
	case chat.FinishLength:
		r.Status, r.IncompleteDetails = statusIncomplete, &incompleteDetails{Reason: reasonMaxTokens}
	case chat.FinishContentFilter:
		r.Status, r.IncompleteDetails = statusIncomplete, &incompleteDetails{Reason: reasonContentFilter}
	}
	r.Usage = usageOf(u)
	if tier != "" {
		r.ServiceTier = tier
	}
}

// fail sets the response's status to failed with f's error.
func (r *response) fail(f fault.Failure) {
	r.Status = statusFailed
	code := openai.ErrorCode(f)
	if code == "" {
		code = f.Kind.Code() // a kind OpenAI's table gives no code of its own
	}
	r.Error = &responseError{Code: code, Message: f.Message}
}

// answer is the whole response to a unary call: its output in Bedrock's order (reasoning,
// the message, the tool calls).
func (c *call) answer(h *head, a *chat.Response) response {
	r := c.response(h)
	if len(a.Reasoning) > 0 {
		r.Output = append(r.Output, c.reasoningItem(h.itemID(prefixReasoning, 0), c.summaries(a.Reasoning), a.Model, a.Reasoning))
	}
	if a.Text != "" || len(a.ToolCalls) == 0 {
		r.Output = append(r.Output, &messageItem{Type: typeMessage, ID: h.itemID(prefixMessage, len(r.Output)), Status: statusCompleted,
			Role: chat.RoleAssistant, Content: []outputText{newOutputText(a.Text)}})
	}
	for _, tc := range a.ToolCalls {
		r.Output = append(r.Output, c.callItem(h, len(r.Output), tc.ID, tc.Name, tc.Arguments))
	}
	r.finish(a.Finish, a.Usage, a.ServiceTier)
	return r
}

// reasoningItem is a reasoning item of blocks the Bedrock model id model wrote: sealed
// when include asked for encrypted_content or the response is stored.
func (c *call) reasoningItem(id string, summary []summaryText, model string, blocks []chat.ReasoningBlock) *reasoningItem {
	it := &reasoningItem{Type: typeReasoning, ID: id, Summary: summary}
	if c.encrypted || c.echo.store {
		it.sealed = c.st.seal(model, blocks)
	}
	if c.encrypted {
		it.EncryptedContent = it.sealed
	}
	return it
}

// summaries are the reasoning's summary parts: one for each block with text, when
// reasoning.summary asked for them.
func (c *call) summaries(blocks []chat.ReasoningBlock) []summaryText {
	out := []summaryText{}
	if !c.summary {
		return out
	}
	for _, b := range blocks {
		if !b.Redacted && b.Text != "" {
			out = append(out, summaryText{Type: summaryTextPart, Text: b.Text})
		}
	}
	return out
}

// callItem is a whole tool call as its item: a function_call, a custom_tool_call of a
// custom tool, or a tool_search_call, under the name and namespace the client gave it.
func (c *call) callItem(h *head, index int, id, flat, arguments string) any {
	if c.names.searches(flat) {
		args := jsontext.Value(arguments)
		if !args.IsValid() {
			args = emptyObject // not yet streamed
		}
		return &toolSearchCallItem{Type: typeToolSearchCall, ID: h.itemID(prefixSearch, index), CallID: id, Status: statusCompleted,
			Execution: executionClient, Arguments: args}
	}
	namespace, name, custom := c.names.of(flat)
	if custom {
		return &customCallItem{Type: typeCustomCall, ID: h.itemID(prefixCustom, index), CallID: id, Name: name, Namespace: namespace,
			Input: customInput(arguments)}
	}
	return &functionCallItem{Type: typeFunctionCall, ID: h.itemID(prefixFunction, index), Status: statusCompleted,
		Arguments: arguments, CallID: id, Name: name, Namespace: namespace}
}

// customInput is a custom tool's input: the one string member of the arguments Bedrock's
// model gave it, or the arguments' text when they hold none.
func customInput(arguments string) string {
	var args struct {
		Input *string `json:"input"`
	}
	if err := json.Unmarshal([]byte(arguments), &args, chatjson.Lenient); err != nil || args.Input == nil {
		return arguments
	}
	return *args.Input
}
