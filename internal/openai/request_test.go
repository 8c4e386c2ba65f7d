package openai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
)

func ptr[T any](v T) *T { return &v }

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, body string
		check      func(t *testing.T, c *call)
	}{
		{"max_completion_tokens wins over max_tokens", `{` + hi + `,"max_tokens":10,"max_completion_tokens":20}`, func(t *testing.T, c *call) {
			assert.Equal(t, ptr(int32(20)), c.req.MaxTokens)
		}},
		{"safety_identifier wins over user", `{` + hi + `,"user":"u","safety_identifier":"s","prompt_cache_key":"k"}`, func(t *testing.T, c *call) {
			assert.Equal(t, "s", c.req.User)
			assert.Equal(t, "k", c.req.CacheKey)
		}},
		{"stream with usage", `{` + hi + `,"stream":true,"stream_options":{"include_usage":true}}`, func(t *testing.T, c *call) {
			assert.True(t, c.stream)
			assert.True(t, c.includeUsage)
		}},
		{"what an SDK sends back of its own answers is ignored", `{"messages":[{"role":"user","content":"hi"},
			{"role":"assistant","content":null,"refusal":null,"annotations":[],"audio":null,"parsed":null,
			 "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}","parsed_arguments":null}}]},
			{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, func(t *testing.T, c *call) {
			require.Len(t, c.req.Messages, 3)
			assert.Equal(t, []chat.ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: "{}"}}, c.req.Messages[1].ToolCalls)
			assert.Empty(t, c.req.Ignored, "nested members are not listed")
		}},
		{"ignored parameters are listed; null ones and no-ops are not", `{` + hi + `,"seed":1,"frequency_penalty":0.5,"logit_bias":{"1":2},
			"metadata":null,"parallel_tool_calls":false,"response_format":{"type":"json_object"},
			"stream":true,"stream_options":{"include_obfuscation":false},"n":1,"logprobs":false,"top_logprobs":0,"modalities":["text"]}`, func(t *testing.T, c *call) {
			assert.Equal(t, []string{"stream_options.include_obfuscation", "seed", "frequency_penalty", "logit_bias"}, c.req.Ignored)
			assert.Equal(t, &chat.ResponseFormat{Type: chat.FormatJSONObject}, c.req.ResponseFormat)
			assert.Equal(t, ptr(false), c.req.ParallelToolCalls)
		}},
		{"tool_validation is an extension, read and not listed", `{` + hi + `,"tool_validation":"repair"}`, func(t *testing.T, c *call) {
			assert.Equal(t, "repair", c.req.ToolValidation)
			assert.Empty(t, c.req.Ignored)
		}},
		{"fields without effect on this request", `{` + hi + `,"max_tokens":5,"max_completion_tokens":6,"stream_options":{"include_usage":true},
			"tools":[{"type":"function","function":{"name":"a","strict":true}},{"type":"function","function":{"name":"b","strict":false}}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, []string{"max_tokens", "stream_options"}, c.req.Ignored)
			assert.True(t, c.req.Tools[0].Strict, "strict is acted on (13.1)")
			assert.False(t, c.req.Tools[1].Strict)
		}},
		{"unknown members are read as leniently as the body: repeated, invalid UTF-8", "{" + hi + ",\"seed\":1,\"seed\":2,\"x\xff\":{\"k\":1,\"k\":\"\xff\"}}", func(t *testing.T, c *call) {
			assert.Equal(t, []string{"seed", "seed", "x\ufffd"}, c.req.Ignored)
		}},
		{"at most 32 listed", "{" + hi + strings.Repeat(`,"k":1`, 1000) + "}", func(t *testing.T, c *call) {
			assert.Len(t, c.req.Ignored, 32)
		}},
		{"refusal stands for an assistant's missing content", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"refusal":"I can't"},{"role":"user","content":"ok"}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, "I can't", c.req.Messages[1].Content)
		}},
		{"defaults are not ignored", `{` + hi + `,"parallel_tool_calls":true,"response_format":{"type":"text"}}`, func(t *testing.T, c *call) {
			assert.Empty(t, c.req.Ignored)
		}},
		{"prompt caching: prompt_cache_retention and cache_control hints, read and not listed", `{"prompt_cache_retention":"24h","messages":[
			{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}]},
			{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}],
			"tools":[{"type":"function","function":{"name":"a"},"cache_control":{"type":"ephemeral"}}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, "24h", c.req.CacheRetention)
			assert.Equal(t, &chat.CacheControl{Type: "ephemeral", TTL: "1h"}, c.req.Messages[0].Parts[0].CacheControl)
			assert.Equal(t, &chat.CacheControl{Type: "ephemeral"}, c.req.Messages[1].CacheControl)
			assert.Equal(t, &chat.CacheControl{Type: "ephemeral"}, c.req.Tools[0].CacheControl)
			assert.Empty(t, c.req.Ignored)
		}},
		{"response_format json_schema as openai-go sends it: read, strict not listed", `{` + hi + `,"response_format":{"type":"json_schema",
			"json_schema":{"name":"weather","strict":true,"schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}}`, func(t *testing.T, c *call) {
			assert.Equal(t, &chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "weather", Strict: true,
				Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}, c.req.ResponseFormat)
			assert.Empty(t, c.req.Ignored)
		}},
		{"allowed_tools", `{` + hi + `,"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],
			"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"b"}}]}}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceRequired, Allowed: []string{"b"}}, c.req.ToolChoice)
		}},
	}
	for tier, want := range map[string]string{"auto": "", "default": "default", "flex": "flex", "priority": "priority", "fast": "priority", "scale": "reserved"} {
		tests = append(tests, struct {
			name, body string
			check      func(t *testing.T, c *call)
		}{"service_tier " + tier, `{` + hi + `,"service_tier":"` + tier + `"}`, func(t *testing.T, c *call) {
			assert.Equal(t, want, c.req.ServiceTier)
		}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := decodeRequest([]byte(tt.body))
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestDecodeRequestRefusals(t *testing.T) {
	t.Parallel()
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		body, param, code, msg string
	}{
		{`{` + hi + `,"n":2}`, "n", fault.ReasonUnsupportedParameter, "n: 2 choices asked for"},
		{`{` + hi + `,"n":0}`, "n", fault.ReasonInvalidValue, "n must be at least 1"},
		{`{` + hi + `,"logprobs":true}`, "logprobs", fault.ReasonUnsupportedParameter, "log probabilities"},
		{`{` + hi + `,"top_logprobs":3}`, "top_logprobs", fault.ReasonUnsupportedParameter, "log probabilities"},
		{`{` + hi + `,"modalities":["text","audio"]}`, "modalities", fault.ReasonUnsupportedParameter, `only ["text"]`},
		{`{` + hi + `,"audio":{"voice":"alloy","format":"mp3"}}`, "audio", fault.ReasonUnsupportedParameter, "audio output"},
		{`{` + hi + `,"service_tier":"gold"}`, "service_tier", fault.ReasonInvalidValue, `service_tier "gold" is not one of`},
		{`{` + hi + `,"max_completion_tokens":0}`, "max_completion_tokens", fault.ReasonInvalidValue, "at least 1, got 0"},
		{`{` + hi + `,"tool_choice":{"type":"custom","custom":{"name":"x"}}}`, "tool_choice.type", fault.ReasonUnsupportedValue, `"custom" is not supported`},
		{`{` + hi + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"none","tools":[]}}}`, "tool_choice.allowed_tools.mode", fault.ReasonInvalidValue, "is not one of"},
		{`{` + hi + `,"temperature":"hot"}`, "temperature", fault.ReasonInvalidValue, "want a number, got string"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content", fault.ReasonInvalidValue, "want a string, null or an array of parts"},
		{`[]`, "", fault.ReasonInvalidValue, "body must be a JSON object, got array"},
		{`{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":[]}}}`, "response_format.json_schema.schema",
			fault.ReasonInvalidValue, "want an object, got array"},
		{`{` + hi + `,"response_format":{"type":["json_object"]}}`, "response_format.type", fault.ReasonInvalidValue, "want a string, got array"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			_, err := decodeRequest([]byte(tt.body))
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, tt.code, re.Reason)
			assert.Contains(t, re.Msg, tt.msg)
		})
	}
}

func TestOwnerOf(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"us.anthropic.claude-sonnet-4-20250514-v1:0":      "anthropic",
		"anthropic.claude-3-haiku-20240307-v1:0":          "anthropic",
		"global.anthropic.claude-sonnet-4-5-v1:0":         "anthropic",
		"amazon.nova-pro-v1:0":                            "amazon",
		"us.meta.llama3-3-70b-instruct-v1:0":              "meta",
		"arn:aws:bedrock:us-east-1:1:inference-profile/x": "bedrock",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0": "anthropic",
		"mystery": "bedrock",
	} {
		assert.Equal(t, want, ownerOf(id), id)
	}
}

// FuzzDecodeRequest: no body panics the decoder, and a body it refuses gets a
// RequestError (a 400 naming what is wrong), never another error (a 500).
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],"seed":1,"seed":2}`,
		`{"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"},"strict":true}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"a"}}]}}}`,
		`{"n":2,"logprobs":true,"service_tier":"scale","max_completion_tokens":0,"metadata":{"k":"\xff"}}`,
		`{"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"a":{"minimum":1}}},"strict":true}}}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}},{"type":"file","file":{"file_data":"x","filename":"a.pdf"}}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeRequest(body)
		if err != nil {
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			return
		}
		require.LessOrEqual(t, len(c.req.Ignored), httpx.MaxIgnored+4) // the declared ones, then at most MaxIgnored
	})
}

// TestDecodeReasoning: reasoning_effort and thinking are read; an assistant's reasoning
// comes back under any of its names, first found wins: reasoning_blocks or
// thinking_blocks, then thinking parts, then reasoning_details (docs/PROTOCOL.md 11.3).
func TestDecodeReasoning(t *testing.T) {
	t.Parallel()
	c, err := decodeRequest([]byte(`{"model":"m","reasoning_effort":"high","thinking":{"type":"enabled","budget_tokens":2048},"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":null,"thinking_blocks":[{"type":"thinking","thinking":"a\n","signature":"s/+="},{"type":"redacted_thinking","data":"ZA=="}],
		 "reasoning_details":[{"type":"reasoning.text","text":"ignored","signature":"x"}]},
		{"role":"assistant","content":[{"type":"thinking","thinking":"p","signature":"ps"},{"type":"text","text":"t"}],"reasoning_details":[{"text":"ignored","signature":"x"}]},
		{"role":"assistant","content":"x","reasoning_details":[{"type":"reasoning.text","text":"d","signature":"ds"},{"type":"reasoning.encrypted","data":"ZQ=="}]}]}`))
	require.NoError(t, err)
	r := c.req
	assert.Equal(t, "high", r.ReasoningEffort)
	require.NotNil(t, r.Thinking)
	assert.Equal(t, chat.Thinking{Type: "enabled", BudgetTokens: ptr(int32(2048))}, *r.Thinking)
	assert.NotContains(t, r.Ignored, "reasoning_effort")
	assert.Equal(t, []chat.ReasoningBlock{{Text: "a\n", Signature: "s/+="}, {Redacted: true, Data: "ZA=="}}, r.Messages[1].Reasoning)
	assert.Nil(t, r.Messages[2].Reasoning, "the parts win over reasoning_details")
	assert.Equal(t, &chat.ReasoningBlock{Text: "p", Signature: "ps"}, r.Messages[2].Parts[0].Reasoning)
	assert.Equal(t, []chat.ReasoningBlock{{Text: "d", Signature: "ds"}, {Redacted: true, Data: "ZQ=="}}, r.Messages[3].Reasoning)
}
