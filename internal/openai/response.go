package openai

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
)

// The answers of docs/PROTOCOL.md 10.2–10.5, in OpenAI's key order, encoded by
// chatjson.Append.

// head is what every answer and chunk of one call share.
type head struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
}

type completion struct {
	head
	Choices     []choice `json:"choices"`
	Usage       usage    `json:"usage"`
	ServiceTier string   `json:"service_tier"`
}

type choice struct {
	Index        int       `json:"index"`
	Message      message   `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type message struct {
	Role string `json:"role"`
	// Content is null when the turn holds only tool calls.
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	// The answer's reasoning, absent when it has none (docs/PROTOCOL.md 11.2): the texts
	// joined with "\n", and the blocks to send back.
	ReasoningContent string                    `json:"reasoning_content,omitempty"`
	ThinkingBlocks   []chatjson.ReasoningBlock `json:"thinking_blocks,omitempty"`
}

type toolCall struct {
	// Index is only in stream deltas.
	Index    *int     `json:"index,omitzero"`
	ID       string   `json:"id,omitempty"`
	Type     string   `json:"type,omitempty"`
	Function function `json:"function"`
}

type function struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usage struct {
	PromptTokens        int32        `json:"prompt_tokens"`
	CompletionTokens    int32        `json:"completion_tokens"`
	TotalTokens         int32        `json:"total_tokens"`
	PromptTokensDetails promptDetail `json:"prompt_tokens_details"`
}

type promptDetail struct {
	CachedTokens     int32 `json:"cached_tokens"`
	CacheWriteTokens int32 `json:"cache_write_tokens"`
}

func usageOf(u chat.Usage) usage {
	return usage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		PromptTokensDetails: promptDetail{CachedTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens},
	}
}

// appendCompletion appends the unary answer of docs/PROTOCOL.md 10.2.
func appendCompletion(dst []byte, h head, r *chat.Response) []byte {
	h.Object = "chat.completion"
	msg := message{Role: "assistant", ReasoningContent: chat.ReasoningText(r.Reasoning), ThinkingBlocks: chatjson.Blocks(r.Reasoning)}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		msg.Content = &r.Text
	}
	if len(r.ToolCalls) > 0 {
		msg.ToolCalls = make([]toolCall, len(r.ToolCalls))
		for i, tc := range r.ToolCalls { // the translator gives arguments "{}" at least
			msg.ToolCalls[i] = toolCall{ID: tc.ID, Type: "function", Function: function{Name: tc.Name, Arguments: tc.Arguments}}
		}
	}
	tier := r.ServiceTier
	if tier == "" {
		tier = "default"
	}
	out := completion{
		head:        h,
		Choices:     []choice{{Message: msg, FinishReason: string(r.Finish)}},
		Usage:       usageOf(r.Usage),
		ServiceTier: tier,
	}
	return appendJSON(dst, &out)
}

// Chunks of the stream (docs/PROTOCOL.md 10.3).

type chunk struct {
	head
	Choices []chunkChoice `json:"choices"`
	// Usage is absent without include_usage; with it, null on every chunk but the last.
	Usage jsontext.Value `json:"usage,omitzero"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitzero"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	// ReasoningContent is a reasoning text fragment; ThinkingBlocks the one block that
	// just ended.
	ReasoningContent string                    `json:"reasoning_content,omitempty"`
	ThinkingBlocks   []chatjson.ReasoningBlock `json:"thinking_blocks,omitempty"`
}

// chunker turns one call's chat events into SSE events. Not safe for concurrent use.
type chunker struct {
	head         head
	includeUsage bool
	started      bool
	// calls holds the one tool-call delta of a chunk, reused; block the one block.
	calls [1]toolCall
	block [1]chatjson.ReasoningBlock
	index int
	// chunk and choice are the chunk being encoded, reused: passed to the encoder as an
	// interface, a chunk built per call would be allocated per call.
	chunk  chunk
	choice [1]chunkChoice
	enc    chatjson.Encoder
}

func newChunker(h head, includeUsage bool) *chunker {
	h.Object = "chat.completion.chunk"
	c := &chunker{head: h, includeUsage: includeUsage}
	c.chunk.head = h
	if includeUsage {
		c.chunk.Usage = nullUsage
	}
	return c
}

var (
	empty     = ""
	nullUsage = jsontext.Value("null")
)

// appendEvent appends the SSE events of ev; the first call also writes the chunk with the
// role.
func (c *chunker) appendEvent(dst []byte, ev *chat.Event) []byte {
	if !c.started {
		c.started = true
		dst = c.appendChunk(dst, delta{Role: "assistant", Content: &empty}, nil)
	}
	switch ev.Kind {
	case chat.EventContent:
		if ev.Text != "" {
			dst = c.appendChunk(dst, delta{Content: &ev.Text}, nil)
		}
	case chat.EventReasoning:
		if ev.Text != "" {
			dst = c.appendChunk(dst, delta{ReasoningContent: ev.Text}, nil)
		}
	case chat.EventReasoningBlock:
		c.block[0] = chatjson.Block(&ev.Block)
		dst = c.appendChunk(dst, delta{ThinkingBlocks: c.block[:]}, nil)
	case chat.EventToolCall:
		// The stream machine gives every call an arguments fragment, "{}" at least.
		if ev.ToolCall.ID != "" {
			// The header: id, type and name once, never repeated (clients concatenate names).
			dst = c.appendCall(dst, ev.Index, toolCall{ID: ev.ToolCall.ID, Type: "function", Function: function{Name: ev.ToolCall.Name}})
		}
		if ev.ToolCall.Arguments != "" {
			dst = c.appendCall(dst, ev.Index, toolCall{Function: function{Arguments: ev.ToolCall.Arguments}})
		}
	case chat.EventDone:
		finish := string(ev.Finish)
		dst = c.appendChunk(dst, delta{}, &finish)
		if c.includeUsage {
			u := usageOf(ev.Usage)
			dst = c.appendData(dst, &struct {
				head
				Choices []chunkChoice `json:"choices"`
				Usage   *usage        `json:"usage"`
			}{c.head, []chunkChoice{}, &u})
		}
		dst = append(dst, "data: [DONE]\n\n"...)
	}
	return dst
}

func (c *chunker) appendCall(dst []byte, index int, tc toolCall) []byte {
	c.index = index
	tc.Index = &c.index
	c.calls[0] = tc
	return c.appendChunk(dst, delta{ToolCalls: c.calls[:]}, nil)
}

func (c *chunker) appendChunk(dst []byte, d delta, finish *string) []byte {
	c.choice[0] = chunkChoice{Delta: d, FinishReason: finish}
	c.chunk.Choices = c.choice[:]
	return c.appendData(dst, &c.chunk)
}

func (c *chunker) appendData(dst []byte, v any) []byte {
	dst = append(dst, "data: "...)
	dst = c.enc.Append(dst, v)
	return append(dst, "\n\n"...)
}

// errorBody is the error of docs/PROTOCOL.md 10.5, as an answer and as a stream's last
// event.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// appendErrorEvent appends a stream's failure: one SSE event, after which the stream ends
// without a finish chunk or [DONE].
func appendErrorEvent(dst []byte, e *errorBody) []byte {
	dst = append(dst, "data: "...)
	dst = appendJSON(dst, e)
	return append(dst, "\n\n"...)
}

func appendJSON(dst []byte, v any) []byte { return chatjson.Append(dst, v) }
