package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
)

// OpenAI's Chat Completions wire (docs/PROTOCOL.md 10) over plain HTTP: requests as the
// official clients send them, answers and streams read as they read them, so that make
// test needs no client library. What is about the official clients themselves is under
// the clients build tag (openai_test.go, node_clients_test.go: make clients).

// oaRequest is a Chat Completions request: the fields the tests set, each left out when
// zero, as the official clients leave out what their caller did not set.
type oaRequest struct {
	Model               string           `json:"model"`
	Messages            []oaMessage      `json:"messages"`
	Tools               []oaTool         `json:"tools,omitzero"`
	ParallelToolCalls   *bool            `json:"parallel_tool_calls,omitzero"`
	ReasoningEffort     string           `json:"reasoning_effort,omitzero"`
	PromptCacheKey      string           `json:"prompt_cache_key,omitzero"`
	MaxTokens           int              `json:"max_tokens,omitzero"`
	MaxCompletionTokens int              `json:"max_completion_tokens,omitzero"`
	ResponseFormat      jsontext.Value   `json:"response_format,omitzero"`
	Stream              bool             `json:"stream,omitzero"`
	StreamOptions       *oaStreamOptions `json:"stream_options,omitzero"`
	// The gateway's own fields (docs/PROTOCOL.md 13).
	ToolValidation string `json:"tool_validation,omitzero"`
	MaxToolRounds  *int   `json:"max_tool_rounds,omitzero"`
}

type oaStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// oaMessage is one message of a request.
type oaMessage struct {
	Role       string       `json:"role"`
	Content    string       `json:"content,omitzero"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitzero"`
	ToolCallID string       `json:"tool_call_id,omitzero"`
}

func oaUser(text string) oaMessage { return oaMessage{Role: "user", Content: text} }

// oaToolResult is the tool message answering the call callID.
func oaToolResult(content, callID string) oaMessage {
	return oaMessage{Role: "tool", Content: content, ToolCallID: callID}
}

type oaToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitzero"`
		Parameters  jsontext.Value `json:"parameters,omitzero"`
	} `json:"function"`
}

// weatherTool is a function tool of a city and a number of days, the city required.
func weatherTool(name string) oaTool {
	var tool oaTool
	tool.Type = "function"
	tool.Function.Name = name
	tool.Function.Description = "Look something up for a city"
	tool.Function.Parameters = jsontext.Value(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)
	return tool
}

// oaAnswer is the message of an answer, or a stream's deltas joined (without reasoning).
type oaAnswer struct {
	Role             string            `json:"role"`
	Content          string            `json:"content"`
	ToolCalls        []oaToolCall      `json:"tool_calls"`
	ReasoningContent *string           `json:"reasoning_content"`
	ThinkingBlocks   []oaThinkingBlock `json:"thinking_blocks"`
}

type oaThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Data      string `json:"data"`
	Signature string `json:"signature"`
}

// param is the answer as the next request's assistant message, as the official clients
// build it (openai-go's ToParam): its content, if any, and its calls; the reasoning
// members are dropped.
func (a oaAnswer) param() oaMessage {
	return oaMessage{Role: "assistant", Content: a.Content, ToolCalls: a.ToolCalls}
}

type oaCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message      oaAnswer `json:"message"`
		FinishReason string   `json:"finish_reason"`
	} `json:"choices"`
	Usage oaUsage `json:"usage"`
}

type oaUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64  `json:"cached_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// oaError is the error of a refused request or of a failed stream's error event.
type oaError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Param   string `json:"param"`
}

// oaPost posts req to g's /v1/chat/completions with key and returns the answer, read to
// its end (so that its trailer is there).
func oaPost(t testing.TB, g started, key string, req oaRequest) (*http.Response, []byte) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+"/v1/chat/completions", bytes.NewReader(body))
	require.NoError(t, err)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, answer
}

// oaChat is a unary call that must succeed.
func oaChat(t testing.TB, g started, key string, req oaRequest) (*http.Response, oaCompletion) {
	t.Helper()
	resp, body := oaPost(t, g, key, req)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var c oaCompletion
	require.NoError(t, json.Unmarshal(body, &c), string(body))
	return resp, c
}

// oaRefusal is a call, unary or streamed, that must be refused with status before any
// chunk; it returns the error as the official clients read it.
func oaRefusal(t testing.TB, g started, key string, req oaRequest, status int) (*http.Response, oaError) {
	t.Helper()
	resp, body := oaPost(t, g, key, req)
	require.Equal(t, status, resp.StatusCode, string(body))
	var e struct {
		Error oaError `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	return resp, e.Error
}

// oaStreamed is a stream read to its end as the official clients' accumulators read it.
type oaStreamed struct {
	chunks  int // the chunks before [DONE] or the error event
	choices int // how many choices they had: the highest index and one
	// answer joins the chunks' deltas as openai-go's accumulator does: the content's
	// pieces, and each call's pieces by its index, the name's too.
	answer oaAnswer
	// reasoning joins the reasoning_content pieces; blocks are the thinking_blocks.
	reasoning string
	blocks    []oaThinkingBlock
	finish    string
	usage     *oaUsage // the usage chunk's; nil without one
	// failure is the error event that ended a failed stream; done says [DONE] ended it.
	failure *oaError
	done    bool
}

type oaChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Delta        oaDelta `json:"delta"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage"`
	Error *oaError `json:"error"`
}

type oaDelta struct {
	Content          string            `json:"content"`
	ReasoningContent string            `json:"reasoning_content"`
	ThinkingBlocks   []oaThinkingBlock `json:"thinking_blocks"`
	ToolCalls        []struct {
		Index    int        `json:"index"`
		ID       string     `json:"id"`
		Function oaFunction `json:"function"`
	} `json:"tool_calls"`
}

// oaStream is oaPost of req as a stream that must start (200), its events read.
// Every chunk must have the stream's one id, which openai-go's accumulator requires.
func oaStream(t testing.TB, g started, key string, req oaRequest) (*http.Response, oaStreamed) {
	t.Helper()
	req.Stream = true
	resp, body := oaPost(t, g, key, req)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var s oaStreamed
	id := ""
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		require.False(t, s.done || s.failure != nil, "nothing after the stream's end: %s", data)
		if data == "[DONE]" {
			s.done = true
			continue
		}
		var c oaChunk
		require.NoError(t, json.Unmarshal([]byte(data), &c), data)
		if c.Error != nil {
			s.failure = c.Error
			continue
		}
		if id == "" {
			id = c.ID
		}
		require.Equal(t, id, c.ID, "one id for the stream's chunks")
		s.add(c)
	}
	return resp, s
}

// add joins a chunk to what came before it.
func (s *oaStreamed) add(c oaChunk) {
	s.chunks++
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for _, ch := range c.Choices {
		s.choices = max(s.choices, ch.Index+1)
		d := ch.Delta
		s.answer.Content += d.Content
		s.reasoning += d.ReasoningContent
		s.blocks = append(s.blocks, d.ThinkingBlocks...)
		for _, tc := range d.ToolCalls {
			for len(s.answer.ToolCalls) <= tc.Index {
				s.answer.ToolCalls = append(s.answer.ToolCalls, oaToolCall{Type: "function"})
			}
			call := &s.answer.ToolCalls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
}
