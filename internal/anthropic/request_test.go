package anthropic

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
)

func ptr[T any](v T) *T { return &v }

const hi = `"max_tokens":1024,"messages":[{"role":"user","content":"hi"}]`

func decoded(t *testing.T, body string) *call {
	t.Helper()
	c, err := decodeRequest([]byte(body), false)
	require.NoError(t, err)
	return c
}

// TestDecodeClaudeCodeRequest: the shape of the request Claude Code sends by default
// (system blocks with cache_control, thinking with display, context_management, a tool
// with defer_loading, a server tool, metadata) is read into the chat model, and what has
// no effect on Bedrock is listed.
func TestDecodeClaudeCodeRequest(t *testing.T) {
	t.Parallel()
	c := decoded(t, `{"model":"claude-sonnet-4-5-20250929","max_tokens":32000,"stream":true,
		"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},
			{"type":"text","text":"list files","cache_control":{"type":"ephemeral"}}]}],
		"tools":[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},
			{"name":"mcp__srv__lookup","input_schema":{"type":"object"},"defer_loading":true},
			{"type":"web_search_20250305","name":"web_search","max_uses":5}],
		"thinking":{"type":"enabled","budget_tokens":31999,"display":"summarized"},
		"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
		"metadata":{"user_id":"user_abc_account__session_1"},"temperature":1,"service_tier":"auto","future_field":{"a":1},"gone":null}`)
	r := c.req
	assert.True(t, c.stream)
	assert.Equal(t, "claude-sonnet-4-5-20250929", r.Model)
	assert.Equal(t, ptr(int32(32000)), r.MaxTokens)
	assert.Equal(t, ptr(1.0), r.Temperature)
	assert.Equal(t, "user_abc_account__session_1", r.User)
	assert.Equal(t, &chat.Thinking{Type: "enabled", BudgetTokens: ptr(int32(31999))}, r.Thinking)
	assert.True(t, r.StreamReasoning)
	require.Len(t, r.Messages, 2)
	assert.Equal(t, chat.Message{Role: chat.RoleSystem, Parts: []chat.Part{{Type: chat.PartText, Text: "You are Claude Code."},
		{Type: chat.PartText, Text: "Be brief.", CacheControl: &chat.CacheControl{Type: "ephemeral", TTL: "1h"}}}}, r.Messages[0])
	assert.Equal(t, &chat.CacheControl{Type: "ephemeral"}, r.Messages[1].Parts[1].CacheControl)
	require.Len(t, r.Tools, 2, "the server tool is dropped")
	assert.Equal(t, chat.Tool{Type: "function", Name: "Bash", Description: "Run a command",
		Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}, r.Tools[0])
	assert.Equal(t, "mcp__srv__lookup", r.Tools[1].Name)
	assert.Equal(t, []string{"tools.1.defer_loading", "tools.2", "thinking.display", "service_tier", "context_management", "future_field"}, r.Ignored)
}

// TestDecodeToolLoop: an assistant's thinking, text and tool_use blocks become one chat
// message with its reasoning kept byte for byte; a user message's tool_results become
// tool messages, in order, before the rest of it.
func TestDecodeToolLoop(t *testing.T) {
	t.Parallel()
	c := decoded(t, `{"max_tokens":100,"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"Let me think.\n","signature":"EqQBCkYIBxgCKkB+/="},
			{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"},
			{"type":"text","text":"Running both."},
			{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls",  "n":12345678901234567890}},
			{"type":"tool_use","id":"toolu_02","name":"Read","input":{},"cache_control":{"type":"ephemeral"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"a.txt"},
			{"type":"tool_result","tool_use_id":"toolu_02","is_error":true,"content":[{"type":"text","text":"no such file"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]},
			{"type":"text","text":"and now?"}]}]}`)
	r := c.req
	require.Len(t, r.Messages, 5)
	a := r.Messages[1]
	assert.Equal(t, []chat.ReasoningBlock{{Text: "Let me think.\n", Signature: "EqQBCkYIBxgCKkB+/="}, {Redacted: true, Data: "EmwKAhgBEgy3va3pzix/LafPsn4a"}}, a.Reasoning)
	assert.Equal(t, []chat.Part{{Type: chat.PartText, Text: "Running both."}}, a.Parts)
	assert.Equal(t, []chat.ToolCall{{ID: "toolu_01", Type: "function", Name: "Bash", Arguments: `{"command":"ls",  "n":12345678901234567890}`},
		{ID: "toolu_02", Type: "function", Name: "Read", Arguments: `{}`}}, a.ToolCalls, "input as written")
	assert.Equal(t, &chat.CacheControl{Type: "ephemeral"}, a.CacheControl)
	assert.Equal(t, chat.Message{Role: chat.RoleTool, ToolCallID: "toolu_01", Content: "a.txt"}, r.Messages[2])
	assert.Equal(t, chat.Message{Role: chat.RoleTool, ToolCallID: "toolu_02", ToolError: true, Parts: []chat.Part{{Type: chat.PartText, Text: "no such file"},
		{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: "data:image/png;base64,iVBO"}}}}, r.Messages[3])
	assert.Equal(t, chat.Message{Role: chat.RoleUser, Parts: []chat.Part{{Type: chat.PartText, Text: "and now?"}}}, r.Messages[4])
	assert.Empty(t, r.Ignored)
}

func TestDecodeRequestFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		check      func(t *testing.T, c *call)
	}{
		{"sampling and stops", `{` + hi + `,"top_p":0.9,"top_k":40,"stop_sequences":["END","STOP"]}`, func(t *testing.T, c *call) {
			assert.Equal(t, ptr(0.9), c.req.TopP)
			assert.Equal(t, ptr(int32(40)), c.req.TopK)
			assert.Equal(t, []string{"END", "STOP"}, c.req.Stop)
		}},
		{"system as a string", `{` + hi + `,"system":"Be terse."}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.Message{Role: chat.RoleSystem, Content: "Be terse."}, c.req.Messages[0])
		}},
		{"a system message after the first user message, as Claude Code sends it", `{"max_tokens":1,"messages":[{"role":"user","content":"hi"},
			{"role":"system","content":[{"type":"text","text":"cwd: /p","cache_control":{"type":"ephemeral"}}]},{"role":"system","content":"later"}]}`, func(t *testing.T, c *call) {
			require.Len(t, c.req.Messages, 3)
			assert.Equal(t, chat.Message{Role: chat.RoleSystem, Parts: []chat.Part{{Type: chat.PartText, Text: "cwd: /p", CacheControl: &chat.CacheControl{Type: "ephemeral"}}}}, c.req.Messages[1])
			assert.Equal(t, chat.Message{Role: chat.RoleSystem, Content: "later"}, c.req.Messages[2])
			assert.Equal(t, "messages.1.content.0.text", c.paths.anthropic("messages[1].content[0].text"))
		}},
		{"tool_choice any without parallel calls", `{` + hi + `,"tools":[{"name":"a"}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceRequired}, c.req.ToolChoice)
			assert.Equal(t, ptr(false), c.req.ParallelToolCalls)
		}},
		{"tool_choice tool", `{` + hi + `,"tools":[{"name":"a","strict":true,"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"tool","name":"a"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "a"}, c.req.ToolChoice)
			assert.Nil(t, c.req.ParallelToolCalls)
			assert.True(t, c.req.Tools[0].Strict)
			assert.Equal(t, &chat.CacheControl{Type: "ephemeral"}, c.req.Tools[0].CacheControl)
		}},
		{"tool_choice auto and none", `{` + hi + `,"tool_choice":{"type":"none"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceNone}, c.req.ToolChoice)
		}},
		{"a custom tool by its type", `{` + hi + `,"tools":[{"type":"custom","name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}}`, func(t *testing.T, c *call) {
			assert.Len(t, c.req.Tools, 1)
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceAuto}, c.req.ToolChoice)
		}},
		{"output_format", `{` + hi + `,"output_format":{"type":"json_schema","schema":{"type":"object"}}}`, func(t *testing.T, c *call) {
			assert.Equal(t, &chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":"object"}`)}, c.req.ResponseFormat)
		}},
		{"output_config.format, effort listed", `{` + hi + `,"output_config":{"format":{"type":"json_schema","schema":{}},"effort":"low"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, &chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{}`)}, c.req.ResponseFormat)
			assert.Equal(t, []string{"output_config.effort"}, c.req.Ignored)
			assert.Equal(t, "output_config.format", c.paths.format)
		}},
		{"adaptive thinking", `{` + hi + `,"thinking":{"type":"adaptive"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, &chat.Thinking{Type: "adaptive"}, c.req.Thinking)
		}},
		{"adaptive thinking's effort, as Claude Code sends it", `{` + hi + `,"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"medium"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, &chat.Thinking{Type: "adaptive"}, c.req.Thinking)
			assert.Equal(t, "medium", c.req.ReasoningEffort)
			assert.Equal(t, []string{"thinking.display"}, c.req.Ignored)
		}},
		{"an effort beside budget thinking is listed", `{` + hi + `,"thinking":{"type":"enabled","budget_tokens":2048},"output_config":{"effort":"high"}}`, func(t *testing.T, c *call) {
			assert.Empty(t, c.req.ReasoningEffort)
			assert.Equal(t, []string{"output_config.effort"}, c.req.Ignored)
		}},
		{"documents: base64 PDF and text", `{"max_tokens":1,"messages":[{"role":"user","content":[
			{"type":"document","title":"r.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"héllo"},"cache_control":{"type":"ephemeral"}}]}]}`, func(t *testing.T, c *call) {
			p := c.req.Messages[0].Parts
			assert.Equal(t, chat.Part{Type: chat.PartFile, File: &chat.File{Data: "data:application/pdf;base64,JVBE", Filename: "r.pdf"}}, p[0])
			assert.Equal(t, chat.Part{Type: chat.PartFile, File: &chat.File{Data: "data:text/plain;base64,aMOpbGxv"},
				CacheControl: &chat.CacheControl{Type: "ephemeral"}}, p[1])
		}},
		{"container and mcp_servers listed", `{` + hi + `,"container":"c1","mcp_servers":[{"type":"url","url":"https://x"}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, []string{"container", "mcp_servers"}, c.req.Ignored)
		}},
		{"an assistant's string content", `{"max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.Message{Role: chat.RoleAssistant, Content: "b"}, c.req.Messages[1])
		}},
		{"a message without blocks is kept, for the translator to judge", `{"max_tokens":1,"system":[],"messages":[{"role":"user","content":[]}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, []chat.Message{{Role: chat.RoleUser}}, c.req.Messages)
		}},
		{"at most 32 unknown members listed", "{" + hi + strings.Repeat(`,"k":1`, 1000) + "}", func(t *testing.T, c *call) {
			assert.Len(t, c.req.Ignored, httpx.MaxIgnored)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, decoded(t, tt.body))
		})
	}
}

// TestDecodeCountTokens: count_tokens' body needs no max_tokens (one given is translated
// as a chat call's would be) and never streams.
func TestDecodeCountTokens(t *testing.T) {
	t.Parallel()
	c, err := decodeRequest([]byte(`{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), true)
	require.NoError(t, err)
	assert.False(t, c.stream)
	assert.Equal(t, ptr(int32(5)), c.req.MaxTokens)
	_, err = decodeRequest([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), true)
	require.NoError(t, err)
}

func TestDecodeRefusals(t *testing.T) {
	t.Parallel()
	const user = `"max_tokens":1,"messages":[{"role":"user","content":[`
	tests := []struct {
		body, param, reason, msg string
	}{
		{`{"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", fault.ReasonInvalidValue, "max_tokens: field required"},
		{`{"max_tokens":1.5,"messages":[]}`, "max_tokens", fault.ReasonInvalidValue, "max_tokens: want an integer, got 1.5"},
		{`{"max_tokens":1,"messages":[{"content":"x"}]}`, "messages.0.role", fault.ReasonInvalidValue, "messages.0.role: field required"},
		{`{"max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, "messages.0.role", fault.ReasonInvalidValue, `messages.0.role "tool" is not one of "user", "assistant", "system"`},
		{`{"max_tokens":1,"messages":[{"role":"user","content":"x"},{"role":"system","content":[{"type":"image"}]}]}`, "messages.1.content.0.type", fault.ReasonUnsupportedValue, `messages.1.content.0.type "image" is not supported; system blocks are text`},
		{`{"max_tokens":1,"messages":[null]}`, "messages.0", fault.ReasonInvalidValue, "messages.0: want an object, got null"},
		{`{"max_tokens":1,"messages":[{"role":"user","content":5}]}`, "messages.0.content", fault.ReasonInvalidValue,
			"messages.0.content: want a string or an array of content blocks, got number"},
		{`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":7}]}]}`, "messages.0.content.0.text", fault.ReasonInvalidValue,
			"messages.0.content.0.text: want a string, got number"},
		{`{` + user + `{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`, "messages.0.content.1.source",
			fault.ReasonUnsupportedValue, "messages.0.content.1.source: url sources are not fetched"},
		{`{` + user + `{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`, "messages.0.content.0.source", fault.ReasonUnsupportedValue, "stores no files"},
		{`{` + user + `{"type":"image"}]}]}`, "messages.0.content.0.source", fault.ReasonInvalidValue, "messages.0.content.0.source: field required"},
		{`{` + user + `{"type":"image","source":{"type":"x"}}]}]}`, "messages.0.content.0.source.type", fault.ReasonInvalidValue, `"x" is not one of "base64", "url", "file"`},
		{`{` + user + `{"type":"document","source":{"type":"url","url":"https://x/y.pdf"}}]}]}`, "messages.0.content.0.source", fault.ReasonUnsupportedValue, "url sources are not fetched"},
		{`{` + user + `{"type":"document","source":{"type":"content","content":[]}}]}]}`, "messages.0.content.0.source", fault.ReasonUnsupportedValue, "content sources"},
		{`{` + user + `{"type":"tool_use","id":"a","name":"b","input":{}}]}]}`, "messages.0.content.0.type", fault.ReasonInvalidValue, "is an assistant's block"},
		{`{` + user + `{"type":"search_result"}]}]}`, "messages.0.content.0.type", fault.ReasonUnsupportedValue, `"search_result" is not supported`},
		{`{` + user + `{"text":"a"}]}]}`, "messages.0.content.0.type", fault.ReasonInvalidValue, "messages.0.content.0.type: field required"},
		{`{` + user + `{"type":"tool_result","tool_use_id":"t","content":[{"type":"document"}]}]}]}`, "messages.0.content.0.content.0.type",
			fault.ReasonUnsupportedValue, "is not supported in a tool_result"},
		{`{` + user + `{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}]}`,
			"messages.0.content.0.content.0.source", fault.ReasonUnsupportedValue, "url sources are not fetched"},
		{`{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":[1]}]}]}`, "messages.0.content.0.input",
			fault.ReasonInvalidValue, "messages.0.content.0.input: want an object, got array"},
		{`{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`, "messages.0.content.0.type",
			fault.ReasonInvalidValue, "is a user's block"},
		{`{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"server_tool_use"}]}]}`, "messages.0.content.0.type",
			fault.ReasonUnsupportedValue, `"server_tool_use" is not supported`},
		{`{` + hi + `,"system":[{"type":"image"}]}`, "system.0.type", fault.ReasonUnsupportedValue, "system blocks are text"},
		{`{` + hi + `,"system":[null]}`, "system.0", fault.ReasonInvalidValue, "want an object, got null"},
		{`{` + hi + `,"tools":[null]}`, "tools.0", fault.ReasonInvalidValue, "want an object, got null"},
		{`{` + hi + `,"tools":[{"name":"a","input_schema":[]}]}`, "tools.0.input_schema", fault.ReasonInvalidValue, "want an object, got array"},
		{`{` + hi + `,"tool_choice":{"type":"sometimes"}}`, "tool_choice.type", fault.ReasonInvalidValue, `"sometimes" is not one of "auto", "any", "tool", "none"`},
		{`{` + hi + `,"tool_choice":{}}`, "tool_choice.type", fault.ReasonInvalidValue, "tool_choice.type: field required"},
		{`{` + hi + `,"tool_choice":{"type":"tool"}}`, "tool_choice.name", fault.ReasonInvalidValue, "field required when tool_choice.type is \"tool\""},
		{`{` + hi + `,"tools":[{"name":"a"},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"web_search"}}`,
			"tool_choice.name", fault.ReasonUnsupportedValue, `tool_choice.name "web_search" is the server tool tools.1 ("web_search_20250305"), which Bedrock cannot run`},
		{`{` + hi + `,"tools":[{"type":"code_execution_20250825","name":"code_execution"},{"type":"web_fetch_20250910","name":"web_fetch"}],"tool_choice":{"type":"any"}}`,
			"tool_choice.type", fault.ReasonUnsupportedValue,
			`tool_choice.type "any" leaves the model nothing to call: tools.0 (code_execution_20250825), tools.1 (web_fetch_20250910) are server tools`},
		{`{` + hi + `,"output_format":{"type":"json_object"}}`, "output_format.type", fault.ReasonUnsupportedValue, `the only type is "json_schema"`},
		{`{` + hi + `,"stop_sequences":["a",null]}`, "stop_sequences.1", fault.ReasonInvalidValue, "want a string, got null"},
		{`[]`, "", fault.ReasonInvalidValue, "body must be a JSON object, got array"},
		{`{"max_tokens":`, "", fault.ReasonInvalidValue, "body is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			_, err := decodeRequest([]byte(tt.body), false)
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, tt.reason, re.Reason)
			assert.Contains(t, re.Msg, tt.msg)
			if tt.param != "" {
				assert.True(t, strings.HasPrefix(re.Msg, tt.param), "the message starts with the path: %s", re.Msg)
			}
		})
	}
}

// TestRewritePaths: the translator's refusals, which name chat-model paths, name the
// block of the Anthropic body the client wrote.
func TestRewritePaths(t *testing.T) {
	t.Parallel()
	c := decoded(t, `{"max_tokens":1,"system":[{"type":"text","text":"s"}],"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{}}]},
		{"role":"user","content":[{"type":"text","text":"first"},{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}},{"type":"document","source":{"type":"base64","media_type":"x","data":"y"}}]}],
		"tools":[{"type":"web_search_20250305","name":"w"},{"name":"f"},{"name":"g"}],"stop_sequences":["x"]}`)
	for chatPath, want := range map[string]string{
		"messages[0].content[0].cache_control.ttl":     "system.0.cache_control.ttl",
		"messages[1].content":                          "messages.0.content",
		"messages[2].tool_calls[1].function.arguments": "messages.1.content.2.input",
		"messages[2].tool_calls[0].function.name":      "messages.1.content.1.name",
		"messages[2].tool_calls[0].id":                 "messages.1.content.1.id",
		"messages[2].content[0]":                       "messages.1.content.0",
		"messages[3].tool_call_id":                     "messages.2.content.1.tool_use_id",
		"messages[3].content[1].image_url.url":         "messages.2.content.1.content.1.source.data",
		"messages[4].content[1].image_url.url":         "messages.2.content.2.source.data",
		"messages[4].content[2].file.file_data":        "messages.2.content.3.source.data",
		"messages[4].content[0]":                       "messages.2.content.0",
		"messages[2]":                                  "messages.1",
		"messages[9].content[0]":                       "messages.9.content.0",
		"tools[0].parameters":                          "tools.1.input_schema",
		"tools[1].function.parameters.properties":      "tools.2.input_schema.properties",
		"tools[1].name":                                "tools.2.name",
		"tool_choice.function.name":                    "tool_choice.name",
		"response_format.json_schema.schema":           "output_format.schema",
		"stop[0]":                                      "stop_sequences.0",
		"max_tokens":                                   "max_tokens",
		"top_k":                                        "top_k",
		"messages":                                     "messages",
	} {
		assert.Equal(t, want, c.paths.anthropic(chatPath), chatPath)
	}
	s := decoded(t, `{"max_tokens":1,"system":"s","messages":[{"role":"user","content":"go"}]}`)
	assert.Equal(t, "system", s.paths.anthropic("messages[0].content"))
	err := fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "messages[2].tool_calls[1].function.arguments is not valid JSON")
	var re *fault.RequestError
	require.ErrorAs(t, c.paths.rewrite(err), &re)
	assert.Equal(t, "messages.1.content.2.input", re.Param)
	assert.Equal(t, "messages.1.content.2.input is not valid JSON", re.Msg)
	other := errors.New("boom")
	assert.Equal(t, other, c.paths.rewrite(other))
}

// FuzzDecodeRequest: no body panics the decoder, a body it refuses gets a RequestError (a
// 400 naming what is wrong), never another error (a 500), and every chat message of a
// body it takes knows where it came from.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"max_tokens":1,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"a","name":"f","input":{"x":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","is_error":true,"content":[{"type":"text","text":"r"}]},{"type":"text","text":"x"}]}]}`,
		`{"max_tokens":1,"tools":[{"name":"a","input_schema":{"type":"object"},"defer_loading":true},{"type":"web_search_20250305","name":"w"}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
		`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"document","source":{"type":"text","data":"x"}}]}],"k":1,"k":2}`,
		`{"max_tokens":1,"thinking":{"type":"enabled","budget_tokens":1024,"display":"omitted"},"output_config":{"format":{"type":"json_schema","schema":{}}},"metadata":{"user_id":"\xff"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeRequest(body, false)
		if err != nil {
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			return
		}
		require.Len(t, c.paths.msgs, len(c.req.Messages))
		require.Len(t, c.paths.tools, len(c.req.Tools))
		for i, m := range c.req.Messages {
			o := c.paths.msgs[i]
			require.Equal(t, len(m.Parts), o.parts.len())
			require.Equal(t, len(m.ToolCalls), o.calls.len())
			require.LessOrEqual(t, o.parts.end, len(c.paths.parts))
			require.LessOrEqual(t, o.calls.end, len(c.paths.calls))
		}
	})
}
