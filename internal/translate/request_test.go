package translate_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/translate"
)

const testModel = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// TestRequestStats checks what Request reports having repaired, per fixture.
func TestRequestStats(t *testing.T) {
	t.Parallel()
	tests := map[string]translate.Stats{
		"basic_tools":                        {},
		"gollm_streaming_history":            {},
		"parallel_partial_answer":            {SynthesizedResults: 1, PartialResults: 1, ParallelDisabled: true},
		"parallel_unanswered_then_user":      {SynthesizedResults: 2},
		"orphan_tool_result":                 {OrphanResults: 3},
		"mcp_names":                          {MappedToolNames: 3, MappedToolCallIDs: 3},
		"reused_tool_call_ids":               {MappedToolCallIDs: 2},
		"history_without_tools":              {MappedToolNames: 1, SynthesizedToolSpecs: 2},
		"tool_choice_required_gated_llama":   {ToolChoiceFallback: "any"},
		"tool_choice_function_gated_mistral": {ToolChoiceFallback: "tool"},
		"tool_choice_required_mistral":       {},
		"temperature_top_p_dropped":          {DroppedTopP: true},
		"top_p_alone_kept":                   {},
		"trailing_tool_calls_old_model":      {SynthesizedResults: 1},
		"trailing_tool_calls_noprefill":      {SynthesizedResults: 2, MappedToolCallIDs: 1},
		"trailing_text_after_tools_prefill":  {},
		"tools_parameters_json":              {},
		"cache_hints":                        {Cache: translate.CacheStats{Hints: 4, Sent: 4}},
		"cache_auto":                         {Cache: translate.CacheStats{Auto: 3, Sent: 3}},
		"cache_auto_nova":                    {Cache: translate.CacheStats{Auto: 2, Sent: 2}},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, names, err := translateFixture(t, name)
			require.NoError(t, err)
			if diff := cmp.Diff(want, names.Stats); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMarshalKeepsBytes: numbers keep every digit and UTF-8 and < > & stay as they are in
// the request body, in tool inputs, JSON results, text and schemas.
func TestMarshalKeepsBytes(t *testing.T) {
	t.Parallel()
	out, _, err := translateFixture(t, "exact_numbers_utf8")
	require.NoError(t, err)
	body, err := bedrock.MarshalRequest(out)
	require.NoError(t, err)
	s := string(body)
	for _, want := range []string{
		`"input":{"id":12345678901234567890,"ratio":1.5,"small":1e-7,"text":"日本語 😀 <&>","nested":{"big":-98765432109876543210.000001}}`,
		`"json":{"stored":12345678901234567890,"note":"日本語 😀 <&>","ratio":1.5}`,
		`{"text":"Store the record <&> 日本語 😀"}`,
		`"description":"Store a record <b>&</b>"`,
		// A schema given as JSON text (as the REST surface and parameters_json give it):
		// the client's key order, every digit, 0.1 as written, no HTML escaping.
		`"inputSchema":{"json":{"properties":{"zeta":{"type":"integer","maximum":12345678901234567890},"alpha":{"type":"number","multipleOf":0.1,"description":"<&> 日本語 😀"}},"required":["zeta"],"type":"object"}}`,
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, `\u00`)
	assert.False(t, strings.HasSuffix(s, "\n"))
}

// TestRESTSchemaBytes follows a REST body through the whole request path (the REST surface's decoding,
// Request, bedrock.MarshalRequest): each tool's schema reaches Bedrock as the client wrote
// it, compacted, with "type":"object" inserted first where it was missing.
func TestRESTSchemaBytes(t *testing.T) {
	t.Parallel()
	body := `{
  "model": "` + testModel + `",
  "messages": [{"role": "user", "content": "Set the limits."}],
  "tools": [
    {"type": "function", "function": {"name": "set_limits", "description": "Set limits <&>",
      "parameters": {
        "type": "object",
        "required": ["zeta"],
        "properties": {
          "zeta":  {"type": "integer", "maximum": 12345678901234567890, "minimum": -1.0E+2},
          "alpha": {"type": "number", "multipleOf": 0.1, "default": 1e-7, "description": "<b>&</b> 日本語 \u00e9 \"q\" \/"},
          "mid":   {"type": "array", "items": {"type": "string", "enum": ["z", "a"]}}
        }
      }}},
    {"name": "flat_untyped", "parameters": {"properties": {"type": {"type": "string"}}, "required": ["type"]}},
    {"type": "function", "function": {"name": "no_params"}}
  ]
}`
	req, _, err := nirmata.DecodeRequest([]byte(body))
	require.NoError(t, err)
	out, _, err := translate.Request(req, capabilities.Lookup(req.Model))
	require.NoError(t, err)
	raw, err := bedrock.MarshalRequest(out)
	require.NoError(t, err)
	require.NoError(t, validateBody(testModel, raw))

	got := string(raw)
	for _, want := range []string{
		`"inputSchema":{"json":{"type":"object","required":["zeta"],"properties":{` +
			`"zeta":{"type":"integer","maximum":12345678901234567890,"minimum":-1.0E+2},` +
			`"alpha":{"type":"number","multipleOf":0.1,"default":1e-7,"description":"<b>&</b> 日本語 \u00e9 \"q\" \/"},` +
			`"mid":{"type":"array","items":{"type":"string","enum":["z","a"]}}}}}`,
		`"inputSchema":{"json":{"type":"object","properties":{"type":{"type":"string"}},"required":["type"]}}`,
		`"inputSchema":{"json":{"type":"object","properties":{}}}`,
		`"description":"Set limits <&>"`,
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, `12345678901234567000`)
	assert.NotContains(t, got, `\u003c`)
}

// TestNamesRoundTrip: every Bedrock name and id in the mcp_names request is valid, unique,
// used consistently, and maps back to what the client sent.
func TestNamesRoundTrip(t *testing.T) {
	t.Parallel()
	req, err := loadRequest(t, filepath.Join("testdata", "mcp_names.request.json"))
	require.NoError(t, err)
	out, names, err := translate.Request(req, capabilities.Lookup(req.Model))
	require.NoError(t, err)

	specNames := map[string]bool{}
	for i, tool := range out.ToolConfig.Tools {
		n := tool.ToolSpec.Name
		assert.Regexp(t, bedrockName, n)
		assert.False(t, specNames[n], "duplicate %s", n)
		specNames[n] = true
		assert.Equal(t, req.Tools[i].Name, names.ToolName(n))
	}
	assert.Equal(t, "fs.read_file", names.ToolName(out.ToolConfig.ToolChoice.Tool.Name))

	calls := req.Messages[1].ToolCalls
	uses := out.Messages[1].Content
	results := out.Messages[2].Content
	require.Len(t, uses, len(calls))
	require.Len(t, results, len(calls))
	for i, c := range calls {
		u := uses[i].ToolUse
		assert.Regexp(t, bedrockName, u.Name)
		assert.Regexp(t, bedrockName, u.ToolUseID)
		assert.Equal(t, c.Name, names.ToolName(u.Name))
		assert.Equal(t, c.ID, names.ToolCallID(u.ToolUseID))
		assert.Equal(t, u.ToolUseID, results[i].ToolResult.ToolUseID)
	}
	// Plan Bedrock invents are passed through.
	assert.Equal(t, "tooluse_new", names.ToolCallID("tooluse_new"))
	assert.Equal(t, "other_tool", names.ToolName("other_tool"))

	// Deterministic: the same request gives the same bytes.
	again, _, err := translate.Request(req, capabilities.Lookup(req.Model))
	require.NoError(t, err)
	a, _ := bedrock.MarshalRequest(out)
	b, _ := bedrock.MarshalRequest(again)
	assert.Equal(t, string(a), string(b))
}

// TestRequestDoesNotPanic feeds shapes the REST and gRPC decoders never produce but other
// callers can.
func TestRequestDoesNotPanic(t *testing.T) {
	t.Parallel()
	user := chat.Message{Role: "user", Content: "hi"}
	tool := chat.Tool{Name: "f"}
	tests := map[string]*chat.Request{
		"empty request":               {},
		"image part without image":    {Messages: []chat.Message{{Role: "user", Parts: []chat.Part{{Type: "image_url"}}}}},
		"empty part":                  {Messages: []chat.Message{{Role: "user", Parts: []chat.Part{{}}}}},
		"empty tool":                  {Messages: []chat.Message{user}, Tools: []chat.Tool{{}}},
		"empty tool call":             {Messages: []chat.Message{user, {Role: "assistant", ToolCalls: []chat.ToolCall{{}}}}},
		"empty parameters":            {Messages: []chat.Message{user}, Tools: []chat.Tool{{Name: "x", Parameters: []byte{}}}},
		"unknown choice mode":         {Messages: []chat.Message{user}, Tools: []chat.Tool{tool}, ToolChoice: chat.ToolChoice{Mode: "sometimes"}},
		"function choice, no name":    {Messages: []chat.Message{user}, Tools: []chat.Tool{tool}, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction}},
		"invalid UTF-8 in parameters": {Messages: []chat.Message{user}, Tools: []chat.Tool{{Name: "x", Parameters: []byte("{\"a\":\"\xff\"}")}}},
		"invalid UTF-8 in arguments":  {Messages: []chat.Message{user, {Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "a", Name: "f", Arguments: "{\"a\":\"\xff\"}"}}}}},
		"NaN temperature":             {Messages: []chat.Message{user}, Temperature: new(nan())},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _, err := translate.Request(req, capabilities.Lookup(testModel))
			if err != nil {
				require.True(t, errors.Is(err, fault.ErrInvalidRequest) || errors.Is(err, fault.ErrUnsupported), err.Error())
				return
			}
			body, err := bedrock.MarshalRequest(out)
			require.NoError(t, err)
			require.NoError(t, validateBody(testModel, body))
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

// TestUnsupportedModel: tools on a model without tool use are refused with fault.ErrUnsupported,
// not fault.ErrInvalidRequest, and the message names the model.
func TestUnsupportedModel(t *testing.T) {
	t.Parallel()
	_, _, err := translateFixture(t, "model_without_tools")
	require.ErrorIs(t, err, fault.ErrUnsupported)
	assert.NotErrorIs(t, err, fault.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "amazon.titan-text-express-v1")
}

// FuzzRequest: on any request, Request does not panic, and either refuses it with one of
// the package's sentinels or produces a body that passes validateBody.
func FuzzRequest(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.request.json"))
	if err != nil {
		f.Fatal(err)
	}
	for i, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(i))
	}
	models := []string{
		testModel,
		"us.anthropic.claude-sonnet-4-6",
		"anthropic.claude-3-5-sonnet-20240620-v1:0",
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"meta.llama3-1-70b-instruct-v1:0",
		"mistral.mistral-large-2407-v1:0",
		"amazon.titan-text-express-v1",
		"amazon.nova-pro-v1:0",
	}
	f.Fuzz(func(t *testing.T, data []byte, modelIndex uint8) {
		creq, _, err := nirmata.DecodeRequest(data)
		if err != nil {
			return
		}
		modelID := models[int(modelIndex)%len(models)]
		var out *bedrock.ConverseRequest
		var names *translate.Plan
		if err == nil {
			out, names, err = translate.Request(creq, capabilities.Lookup(modelID))
		}
		if err != nil {
			if !errors.Is(err, fault.ErrInvalidRequest) && !errors.Is(err, fault.ErrUnsupported) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		body, err := bedrock.MarshalRequest(out)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if err := validateBody(modelID, body); err != nil {
			t.Fatalf("invalid Converse request for %s: %v\nrequest: %s\nbody: %s", modelID, err, data, body)
		}
		if err := translate.CheckSectionSizes(out); err != nil {
			t.Fatalf("%v\nrequest: %s", err, data)
		}
		for _, m := range out.Messages {
			for _, b := range m.Content {
				if b.ToolUse != nil && names.ToolName(b.ToolUse.Name) == "" {
					t.Fatalf("tool name %q maps back to nothing", b.ToolUse.Name)
				}
			}
		}
	})
}

// benchRequest is a typical agent turn: 3 tools, 6 messages, one round of parallel calls.
func benchRequest() *chat.Request {
	tool := func(name, desc, prop string) chat.Tool {
		return chat.Tool{Type: "function", Name: name, Description: desc, Wrapped: true, Parameters: []byte(
			`{"type":"object","properties":{"` + prop + `":{"type":"string","description":"The ` + prop + `"}},"required":["` + prop + `"]}`)}
	}
	call := func(id, name, args string) chat.ToolCall {
		return chat.ToolCall{ID: id, Type: "function", Name: name, Arguments: args}
	}
	return &chat.Request{
		Model: testModel,
		Messages: []chat.Message{
			{Role: "system", Content: "You are a Kubernetes policy assistant."},
			{Role: "user", Content: "Write a policy that requires pod labels and save it."},
			{Role: "assistant", Content: "I'll draft and save it.", ToolCalls: []chat.ToolCall{
				call("call_1", "generate_policy", `{"kind": "ClusterPolicy", "rule": "require-labels"}`),
				call("call_2", "fs.write_file", `{"path": "policy.yaml", "mode": 420}`),
			}},
			{Role: "tool", ToolCallID: "call_1", Content: `{"policy": "apiVersion: kyverno.io/v1\nkind: ClusterPolicy"}`},
			{Role: "tool", ToolCallID: "call_2", Content: "written 1.2 KB"},
			{Role: "user", Content: "Now validate it against my cluster."},
		},
		Tools: []chat.Tool{
			tool("generate_policy", "Generate a Kyverno policy", "kind"),
			tool("fs.write_file", "Write a file", "path"),
			tool("validate_policy", "Validate a policy against a cluster", "policy"),
		},
		ToolChoice:  chat.ToolChoice{Mode: chat.ChoiceAuto},
		MaxTokens:   new(int32(1024)),
		Temperature: new(0.2),
	}
}

func BenchmarkRequest(b *testing.B) {
	req := benchRequest()
	model := capabilities.Lookup(req.Model)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := translate.Request(req, model); err != nil {
			b.Fatal(err)
		}
	}
}
