//go:build clients

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// The official openai-go client against the gateway's OpenAI surface, with the simulator
// behind it over HTTP: what is about the client itself (its round trips, its stream
// accumulator, its errors and retries). Every answer the client reads is also checked
// against what Bedrock was sent. A real client program, so under the clients build tag
// (make clients); openaiwire_test.go speaks the same wire without it.

// openAIGateway starts a gateway whose Bedrock is a recorded simulator with faults, and
// returns an openai-go client for it, which reads a stream to its response's end
// (drainOnClose). The gateway itself does not retry Bedrock, so what the client sees is
// what one Bedrock call did.
func openAIGateway(t *testing.T, faults ...string) (openai.Client, *recordedSim, started) {
	t.Helper()
	sim, g := recordedGateway(t, faults...)
	client := openai.NewClient(option.WithBaseURL("http://"+g.HTTP+"/v1/"), option.WithAPIKey(testKey), drainOnClose)
	return client, sim, g
}

// drainOnClose makes closing a response body read it to its end first: the SDK stops at
// [DONE] (or an error event), and an HTTP trailer is there only once the body's end was
// read. That end is also when the gateway has recorded the call: its access line, metrics
// and span are recorded as the handler returns, after the last event went out and before
// net/http ends the response.
var drainOnClose = option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil {
		resp.Body = drainingBody{resp.Body}
	}
	return resp, err
})

type drainingBody struct{ io.ReadCloser }

func (b drainingBody) Close() error {
	_, _ = io.Copy(io.Discard, b.ReadCloser)
	return b.ReadCloser.Close()
}

// sdkWeatherTool is weatherTool as openai-go's caller writes it.
func sdkWeatherTool(name string) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name:        name,
		Description: openai.String("Look something up for a city"),
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			"required":   []string{"city"},
		},
	})
}

func TestOpenAIUnary(t *testing.T) {
	t.Parallel()
	client, sim, _ := openAIGateway(t)
	var raw *http.Response
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model:            testModel,
		Messages:         []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Say hello")},
		MaxTokens:        openai.Int(200),
		Temperature:      openai.Float(0.5),
		Stop:             openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("END")},
		SafetyIdentifier: openai.String("user-42"),
		User:             openai.String("ignored-when-safety-identifier-is-set"),
		PromptCacheKey:   openai.String("conv-7"),
		ServiceTier:      openai.ChatCompletionNewParamsServiceTierPriority,
		Seed:             openai.Int(7),
	}, option.WithResponseInto(&raw))
	require.NoError(t, err)

	assert.Equal(t, "chatcmpl-"+raw.Header.Get("X-Request-Id"), resp.ID)
	assert.Equal(t, "chat.completion", string(resp.Object))
	assert.Equal(t, testModel, resp.Model)
	assert.Positive(t, resp.Created)
	require.Len(t, resp.Choices, 1)
	c := resp.Choices[0]
	assert.Equal(t, "stop", c.FinishReason)
	assert.Equal(t, "assistant", string(c.Message.Role))
	assert.Contains(t, c.Message.Content, "Say hello")
	assert.Empty(t, c.Message.ToolCalls)
	assert.Positive(t, resp.Usage.PromptTokens)
	assert.Positive(t, resp.Usage.CompletionTokens)
	assert.Equal(t, resp.Usage.PromptTokens+resp.Usage.CompletionTokens, resp.Usage.TotalTokens)
	assert.True(t, resp.Usage.PromptTokensDetails.JSON.CachedTokens.Valid(), "prompt_tokens_details is always present")
	assert.Equal(t, "default", string(resp.ServiceTier))
	assert.Equal(t, "seed", raw.Header.Get("X-Gateway-Ignored-Params"))

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 1)
	sent := reqs[0]
	assert.Equal(t, map[string]any{"maxTokens": 200.0, "temperature": 0.5, "stopSequences": []any{"END"}}, sent["inferenceConfig"])
	assert.Equal(t, []any{map[string]any{"text": "Be brief."}}, sent["system"])
	assert.Equal(t, map[string]any{"user": "user-42", "cache_key": "conv-7", "gateway_key": testKeyID}, sent["requestMetadata"])
	assert.Equal(t, map[string]any{"type": "priority"}, sent["serviceTier"])
}

// TestOpenAIStreamAccumulator: the stream read with the SDK's accumulator is the unary
// answer, usage comes once, in a chunk of its own, and the stream ends with [DONE].
func TestOpenAIStreamAccumulator(t *testing.T) {
	t.Parallel()
	client, _, _ := openAIGateway(t)
	params := openai.ChatCompletionNewParams{
		Model:    testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Use lookup_weather for Paris, then say what you found")},
		Tools:    []openai.ChatCompletionToolUnionParam{sdkWeatherTool("lookup_weather")},
	}
	unary, err := client.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	require.Len(t, unary.Choices[0].Message.ToolCalls, 1)

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	usageChunks, chunks := 0, 0
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		chunk := stream.Current()
		chunks++
		require.True(t, acc.AddChunk(chunk), "chunk %d refused by the accumulator", chunks)
		assert.Equal(t, "chatcmpl-", chunk.ID[:9])
		assert.Equal(t, testModel, chunk.Model)
		if chunk.JSON.Usage.Valid() && chunk.Usage.TotalTokens > 0 {
			usageChunks++
			assert.Empty(t, chunk.Choices, "the usage chunk has no choices")
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, 1, usageChunks, "usage is sent once")
	require.Len(t, acc.Choices, 1)
	got := acc.Choices[0]
	want := unary.Choices[0]
	assert.Equal(t, want.FinishReason, got.FinishReason)
	assert.Equal(t, "tool_calls", got.FinishReason)
	assert.Equal(t, want.Message.Content, got.Message.Content)
	require.Len(t, got.Message.ToolCalls, 1)
	// openai-go concatenates names: a name repeated in a later delta would read
	// "lookup_weatherlookup_weather".
	assert.Equal(t, "lookup_weather", got.Message.ToolCalls[0].Function.Name)
	assert.Equal(t, want.Message.ToolCalls[0].ID, got.Message.ToolCalls[0].ID)
	assert.JSONEq(t, want.Message.ToolCalls[0].Function.Arguments, got.Message.ToolCalls[0].Function.Arguments)
	assert.Equal(t, unary.Usage.PromptTokens, acc.Usage.PromptTokens)
	assert.Equal(t, unary.Usage.CompletionTokens, acc.Usage.CompletionTokens)
	require.Len(t, finished, 1)
	assert.Equal(t, "lookup_weather", finished[0].Name)
}

// TestOpenAIToolLoop: three turns of a tool loop as SDK users write it, each assistant
// message sent back as the SDK returned it (ToParam), unary and streamed.
func TestOpenAIToolLoop(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[streamed], func(t *testing.T) {
			client, sim, _ := openAIGateway(t)
			tools := []openai.ChatCompletionToolUnionParam{sdkWeatherTool("get_weather"), sdkWeatherTool("get_forecast")}
			messages := []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("You answer questions about the weather."),
				openai.UserMessage("Call get_weather for Oslo."),
			}
			ask := func() openai.ChatCompletionMessage {
				params := openai.ChatCompletionNewParams{Model: testModel, Messages: messages, Tools: tools}
				if !streamed {
					resp, err := client.Chat.Completions.New(t.Context(), params)
					require.NoError(t, err)
					return resp.Choices[0].Message
				}
				stream := client.Chat.Completions.NewStreaming(t.Context(), params)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				require.NoError(t, stream.Err())
				return acc.Choices[0].Message
			}

			// Turn 1: the model calls the tool.
			msg := ask()
			require.Len(t, msg.ToolCalls, 1)
			call := msg.ToolCalls[0]
			assert.Equal(t, "get_weather", call.Function.Name)
			var args map[string]any
			require.NoError(t, json.Unmarshal([]byte(call.Function.Arguments), &args))
			assert.Contains(t, args, "city")
			messages = append(messages, msg.ToParam(), openai.ToolMessage(`{"temp_c": 4, "sky": "overcast"}`, call.ID))

			// Turn 2: the model answers from the result.
			msg = ask()
			assert.Empty(t, msg.ToolCalls)
			assert.Contains(t, msg.Content, "overcast")

			// Turn 3: another tool, the whole history resent.
			messages = append(messages, msg.ToParam(), openai.UserMessage("Now call get_forecast for Oslo."))
			msg = ask()
			require.Len(t, msg.ToolCalls, 1)
			assert.Equal(t, "get_forecast", msg.ToolCalls[0].Function.Name)
			assert.NotEqual(t, call.ID, msg.ToolCalls[0].ID)

			// Bedrock got the history with the call and its result paired.
			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 3)
			last := reqs[2]["messages"].([]any)
			require.Len(t, last, 5)
			use := blockOf(t, last[1], "toolUse")
			result := blockOf(t, last[2], "toolResult")
			assert.Equal(t, use["toolUseId"], result["toolUseId"])
			assert.Equal(t, []any{map[string]any{"json": map[string]any{"temp_c": 4.0, "sky": "overcast"}}}, result["content"])
		})
	}
}

// TestOpenAIParallelCalls: two tools named in one turn are two calls with their own ids
// and indexes, and their two results go back in one Bedrock user turn.
func TestOpenAIParallelCalls(t *testing.T) {
	t.Parallel()
	client, sim, _ := openAIGateway(t)
	tools := []openai.ChatCompletionToolUnionParam{sdkWeatherTool("get_weather"), sdkWeatherTool("get_time")}
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Call get_weather and get_time for Lima.")}
	stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: testModel, Messages: messages, Tools: tools})
	var acc openai.ChatCompletionAccumulator
	indexes := map[int64]string{}
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, c := range chunk.Choices {
			for _, tc := range c.Delta.ToolCalls {
				if tc.ID != "" {
					indexes[tc.Index] = tc.ID
				}
			}
		}
	}
	require.NoError(t, stream.Err())
	msg := acc.Choices[0].Message
	require.Len(t, msg.ToolCalls, 2)
	assert.Equal(t, "get_weather", msg.ToolCalls[0].Function.Name)
	assert.Equal(t, "get_time", msg.ToolCalls[1].Function.Name)
	assert.NotEqual(t, msg.ToolCalls[0].ID, msg.ToolCalls[1].ID)
	assert.Equal(t, map[int64]string{0: msg.ToolCalls[0].ID, 1: msg.ToolCalls[1].ID}, indexes)

	messages = append(messages, msg.ToParam(),
		openai.ToolMessage("sunny", msg.ToolCalls[0].ID), openai.ToolMessage("09:00", msg.ToolCalls[1].ID))
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: testModel, Messages: messages, Tools: tools})
	require.NoError(t, err)
	assert.Contains(t, resp.Choices[0].Message.Content, "sunny")
	assert.Contains(t, resp.Choices[0].Message.Content, "09:00")
	last := sim.converseRequests(t)[1]["messages"].([]any)
	results := last[len(last)-1].(map[string]any)["content"].([]any)
	require.Len(t, results, 2, "both results in one user turn")
}

// onePixelPNG is a valid 1×1 PNG.
var onePixelPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

func TestOpenAIImage(t *testing.T) {
	t.Parallel()
	client, sim, _ := openAIGateway(t)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(onePixelPNG)
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url, Detail: "high"}),
		})},
	})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Choices[0].Message.Content)
	content := sim.converseRequests(t)[0]["messages"].([]any)[0].(map[string]any)["content"].([]any)
	require.Len(t, content, 2)
	img := content[1].(map[string]any)["image"].(map[string]any)
	assert.Equal(t, "png", img["format"])
	assert.Equal(t, base64.StdEncoding.EncodeToString(onePixelPNG), img["source"].(map[string]any)["bytes"])

	_, err = client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("And this one?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png"}),
		})},
	})
	apiErr := requireAPIError(t, err, http.StatusBadRequest)
	assert.Equal(t, "invalid_request_error", apiErr.Type)
	assert.Equal(t, "unsupported_value", apiErr.Code)
	assert.Equal(t, "messages[0].content[1].image_url.url", apiErr.Param)
	assert.Len(t, sim.converseRequests(t), 1, "refused before Bedrock")
}

// TestOpenAIDocument: a file part becomes a Bedrock document, named from its filename,
// and a file_id (the gateway stores no files) is refused naming the part.
func TestOpenAIDocument(t *testing.T) {
	t.Parallel()
	client, sim, _ := openAIGateway(t)
	pdf := []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("Summarise the attached report."),
			openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
				FileData: openai.String("data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf)),
				Filename: openai.String("q3_report.pdf"),
			}),
		})},
	})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Choices[0].Message.Content)
	doc := blockOf(t, sim.converseRequests(t)[0]["messages"].([]any)[0], "document")
	assert.Equal(t, "pdf", doc["format"])
	assert.Equal(t, "q3 report pdf", doc["name"])
	assert.Equal(t, base64.StdEncoding.EncodeToString(pdf), doc["source"].(map[string]any)["bytes"])

	_, err = client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("And this one?"),
			openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{FileID: openai.String("file-abc")}),
		})},
	})
	apiErr := requireAPIError(t, err, http.StatusBadRequest)
	assert.Equal(t, "unsupported_value", apiErr.Code)
	assert.Equal(t, "messages[0].content[1].file.file_id", apiErr.Param)
	assert.Len(t, sim.converseRequests(t), 1, "refused before Bedrock")
}

func requireAPIError(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, status, apiErr.StatusCode, apiErr.RawJSON())
	return apiErr
}

// TestOpenAIErrors: each error class as openai-go reads it, with type, code and param.
func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	client, sim, g := openAIGateway(t)
	hello := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
	base := openai.ChatCompletionNewParams{Model: testModel, Messages: hello}
	tests := []struct {
		name                string
		client              openai.Client
		params              openai.ChatCompletionNewParams
		opts                []option.RequestOption
		status              int
		typ, code, param    string
		messageContains     string
		reachedBedrock      bool
		shouldRetryDisabled bool
	}{
		{"wrong key", openai.NewClient(option.WithBaseURL("http://"+g.HTTP+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0)),
			base, nil, 401, "authentication_error", "invalid_api_key", "", "API key", false, false},
		{"n above 1", client, base, []option.RequestOption{option.WithJSONSet("n", 2)},
			400, "invalid_request_error", "unsupported_parameter", "n", "n must be 1", false, false},
		{"logprobs", client, base, []option.RequestOption{option.WithJSONSet("logprobs", true)},
			400, "invalid_request_error", "unsupported_parameter", "logprobs", "log probabilities", false, false},
		{"temperature above Bedrock's range", client, base, []option.RequestOption{option.WithJSONSet("temperature", 1.5)},
			400, "invalid_request_error", "invalid_value", "temperature", "between 0 and 1", false, false},
		{"max_completion_tokens zero", client, base, []option.RequestOption{option.WithJSONSet("max_completion_tokens", 0)},
			400, "invalid_request_error", "invalid_value", "max_completion_tokens", "at least 1", false, false},
		{"bad role", client, base, []option.RequestOption{option.WithJSONSet("messages", []any{map[string]any{"role": "function", "content": "x", "name": "f"}})},
			400, "invalid_request_error", "unsupported_value", "messages[0].role", "deprecated", false, false},
		{"wrong type", client, base, []option.RequestOption{option.WithJSONSet("max_tokens", "many")},
			400, "invalid_request_error", "invalid_value", "max_tokens", "want an integer, got string", false, false},
		{"tool type", client, base, []option.RequestOption{option.WithJSONSet("tools", []any{map[string]any{"type": "custom", "custom": map[string]any{"name": "x"}}})},
			400, "invalid_request_error", "unsupported_value", "tools[0].type", "not supported", false, false},
		{"not a model id", client, openai.ChatCompletionNewParams{Model: "no-such-model", Messages: hello}, nil,
			404, "invalid_request_error", "model_not_found", "model", `model "no-such-model" is neither an alias`, false, false},
		{"a model Bedrock does not know", client, openai.ChatCompletionNewParams{Model: "acme.no-such-model-v1", Messages: hello}, nil,
			404, "invalid_request_error", "model_not_found", "model", `model "acme.no-such-model-v1" is not a model Bedrock knows`, true, false},
		{"body too large", client, base, []option.RequestOption{option.WithJSONSet("padding", strings.Repeat("x", 11<<20))},
			413, "invalid_request_error", "request_too_large", "", "too large", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(sim.converseRequests(t))
			var raw *http.Response
			opts := append([]option.RequestOption{option.WithResponseInto(&raw)}, tt.opts...)
			_, err := tt.client.Chat.Completions.New(t.Context(), tt.params, opts...)
			apiErr := requireAPIError(t, err, tt.status)
			assert.Equal(t, tt.typ, apiErr.Type)
			assert.Equal(t, tt.code, apiErr.Code)
			assert.Equal(t, tt.param, apiErr.Param)
			assert.True(t, apiErr.JSON.Param.Valid() || tt.param == "", "param present")
			assert.Contains(t, apiErr.Message, tt.messageContains)
			assert.NotEmpty(t, apiErr.Response.Header.Get("X-Request-Id"))
			assert.Equal(t, tt.shouldRetryDisabled, apiErr.Response.Header.Get("X-Should-Retry") == "false")
			assert.Equal(t, tt.reachedBedrock, len(sim.converseRequests(t)) > before)
		})
	}
}

// TestOpenAIRetryAfter: a throttled call is a 429 with Retry-After, which openai-go waits
// out and retries; the retry succeeds.
func TestOpenAIRetryAfter(t *testing.T) {
	t.Parallel()
	client, sim, g := openAIGateway(t, "throttle,times=1")
	var raw *http.Response
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}, option.WithResponseInto(&raw), option.WithMaxRetries(1))
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Choices[0].Message.Content)
	assert.Equal(t, int64(2), sim.Requests(), "the SDK retried once")
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "openai", "code": "resource_exhausted"}))

	// Without retries the client sees the 429 itself.
	client2, _, _ := openAIGateway(t, "throttle")
	_, err = client2.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}, option.WithMaxRetries(0))
	apiErr := requireAPIError(t, err, http.StatusTooManyRequests)
	assert.Equal(t, "rate_limit_error", apiErr.Type)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Equal(t, "1", apiErr.Response.Header.Get("Retry-After"))
}

// TestOpenAIShouldRetry: a key over its tokens_per_day is refused with a Retry-After too
// long to wait and x-should-retry false, which keeps openai-go, with its default retries,
// from retrying: the gateway sees one request.
func TestOpenAIShouldRetry(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	clock := clocktest.New(at37)
	g := start(t, keysConfig(t, "keys:\n  - {name: daily, key: daily-key-0123456789, tokens_per_day: 10}\n"),
		gateway.WithClock(clock.Now), sim.upstream())
	resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer daily-key-0123456789", hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the first answer overshoots: %s", answer)

	client := openai.NewClient(option.WithBaseURL("http://"+g.HTTP+"/v1/"), option.WithAPIKey("daily-key-0123456789"))
	_, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	apiErr := requireAPIError(t, err, http.StatusTooManyRequests)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Equal(t, "false", apiErr.Response.Header.Get("X-Should-Retry"))
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_rate_limited_total", map[string]string{"key": "daily", "limit": "tokens_per_day"}),
		"one call: the SDK did not retry")
	assert.Equal(t, int64(1), sim.Requests(), "refusals cost no Bedrock call")
}

// TestOpenAIMidStreamFailure: a Bedrock failure after the first chunk is an error event
// and no [DONE], so stream.Err() reports it; a failure before the first chunk keeps its
// status.
func TestOpenAIMidStreamFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault, typ, code string
	}{
		{"stream_exception", "rate_limit_error", "rate_limit_exceeded"},
		{"stream_exception,exception=modelStreamErrorException", "server_error", "upstream_error"},
		{"truncate", "server_error", "upstream_error"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			client, _, _ := openAIGateway(t, tt.fault)
			stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
				Model:         testModel,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a long story")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				chunk := stream.Current()
				acc.AddChunk(chunk)
				for _, c := range chunk.Choices {
					assert.Empty(t, c.FinishReason, "no finish chunk on a failed stream")
				}
			}
			var se *ssestream.StreamError
			require.ErrorAs(t, stream.Err(), &se)
			var body struct {
				Error struct {
					Message, Type string
					Code          *string
					Param         *string
				}
			}
			require.NoError(t, json.Unmarshal(se.Event.Data, &body))
			assert.Equal(t, tt.typ, body.Error.Type)
			require.NotNil(t, body.Error.Code)
			assert.Equal(t, tt.code, *body.Error.Code)
			assert.Nil(t, body.Error.Param)
			assert.NotEmpty(t, body.Error.Message)
			assert.NotEmpty(t, acc.Choices[0].Message.Content, "the text before the failure arrived")
		})
	}

	t.Run("before the first chunk", func(t *testing.T) {
		client, _, _ := openAIGateway(t, "throttle")
		stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		}, option.WithMaxRetries(0))
		for stream.Next() {
			t.Fatal("no chunk expected")
		}
		requireAPIError(t, stream.Err(), http.StatusTooManyRequests)
	})
}

// TestOpenAIModels: the models the gateway lists, as openai-go reads them.
func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	cfg := defaultConfig(t)
	cfg.ModelAliases = map[string][]config.Target{"sonnet": {{ModelID: testModel}}, "nova": {{ModelID: "amazon.nova-pro-v1:0"}}}
	g := start(t, cfg, sim.upstream())
	client := openai.NewClient(option.WithBaseURL("http://"+g.HTTP+"/v1/"), option.WithAPIKey(testKey), drainOnClose)

	page, err := client.Models.List(t.Context())
	require.NoError(t, err)
	var ids, owners []string
	for _, m := range page.Data {
		ids, owners = append(ids, m.ID), append(owners, m.OwnedBy)
		assert.Equal(t, "model", string(m.Object))
		assert.Positive(t, m.Created)
	}
	assert.Equal(t, []string{"nova", "sonnet", cfg.DefaultModel}, ids)
	assert.Equal(t, []string{"amazon", "anthropic", "anthropic"}, owners)

	m, err := client.Models.Get(t.Context(), cfg.DefaultModel) // holds ":" and "."
	require.NoError(t, err)
	assert.Equal(t, cfg.DefaultModel, m.ID)
	_, err = client.Models.Get(t.Context(), "gpt-4o")
	apiErr := requireAPIError(t, err, http.StatusNotFound)
	assert.Equal(t, "model_not_found", apiErr.Code)

	// An alias works as the model of a chat, and the answer names it.
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "sonnet", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	require.NoError(t, err)
	assert.Equal(t, "sonnet", resp.Model)

	// The listing needs a key.
	anon := openai.NewClient(option.WithBaseURL("http://"+g.HTTP+"/v1/"), option.WithAPIKey("nope"), option.WithMaxRetries(0))
	_, err = anon.Models.List(t.Context())
	requireAPIError(t, err, http.StatusUnauthorized)
}

// TestOpenAIUnknownRoute: a /v1 path the gateway does not serve is an OpenAI-shaped 404.
func TestOpenAIUnknownRoute(t *testing.T) {
	t.Parallel()
	client, _, _ := openAIGateway(t)
	_, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "x", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")},
	}, option.WithMaxRetries(0))
	apiErr := requireAPIError(t, err, http.StatusNotFound)
	assert.Equal(t, "invalid_request_error", apiErr.Type)
	assert.Contains(t, apiErr.Message, "no route for POST /v1/embeddings")
}
