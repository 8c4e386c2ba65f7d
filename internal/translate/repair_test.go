package translate

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// strictModel has native strict tool use (docs/BEDROCK.md I6); sonnet4 has not.
const strictModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

var savePolicyTool = chat.Tool{Type: "function", Name: "save_policy", Wrapped: true,
	Parameters: []byte(`{"type":"object","properties":{"filename":{"type":"string"},"replicas":{"type":"integer"}},"required":["filename"]}`)}

// TestStrictTools: strict reaches Bedrock as toolSpec.strict only on the models that have
// it; elsewhere it is not sent, and the tool's calls are repaired instead (13.1).
func TestStrictTools(t *testing.T) {
	t.Parallel()
	strict := savePolicyTool
	strict.Strict = true
	plain := savePolicyTool
	plain.Name = "list_policies"
	req := &chat.Request{Messages: []chat.Message{{Role: "user", Content: "save it"}}, Tools: []chat.Tool{strict, plain}}
	for _, tt := range []struct {
		model  string
		native bool
	}{{strictModel, true}, {sonnet4, false}, {"amazon.nova-pro-v1:0", false}} {
		model := capabilities.Lookup(tt.model)
		out, _, err := Request(req, model)
		require.NoError(t, err)
		specs := out.ToolConfig.Tools
		assert.Equal(t, tt.native, specs[0].ToolSpec.Strict, tt.model)
		assert.False(t, specs[1].ToolSpec.Strict, tt.model)
		assert.Equal(t, !tt.native, StrictRepair(&strict, model), tt.model)
		assert.False(t, StrictRepair(&plain, model), tt.model)
	}
	out, _, err := Request(req, capabilities.Lookup(strictModel))
	require.NoError(t, err)
	b, err := bedrock.MarshalRequest(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), `{"toolSpec":{"name":"save_policy","inputSchema":{"json":{"type":"object","properties":{"filename":{"type":"string"},"replicas":{"type":"integer"}},"required":["filename"]}},"strict":true}}`)
	assert.Contains(t, string(b), `{"toolSpec":{"name":"list_policies","inputSchema":`)
	assert.NotContains(t, string(b), `"list_policies","inputSchema":{"json":{"type":"object","properties":{"filename":{"type":"string"},"replicas":{"type":"integer"}},"required":["filename"]}},"strict"`)
}

// TestRepairRequest: attempt 2 is the original request, the model's turn verbatim
// (reasoning first, Bedrock's names and ids), and one error result per call.
func TestRepairRequest(t *testing.T) {
	t.Parallel()
	tool := savePolicyTool
	tool.Name = "fs.save_policy" // a name Bedrock gets as fs_save_policy
	req := &chat.Request{
		Messages: []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Save two policies."}},
		Tools:    []chat.Tool{tool},
	}
	orig, names, err := RequestWith(req, capabilities.Lookup(sonnet4), Options{NoAutoCache: true})
	require.NoError(t, err)
	before, err := bedrock.MarshalRequest(orig)
	require.NoError(t, err)

	text, blank := "Saving both.", " "
	turn := bedrock.Message{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{
		{ReasoningContent: &bedrock.ReasoningContentBlock{ReasoningText: &bedrock.ReasoningText{Text: "They want two.", Signature: "c2ln"}}},
		{Text: &text},
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "tooluse_1", Name: "fs_save_policy", Input: jsontext.Value(`{"replicas":"3"}`)}},
		{Text: &blank},
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "tooluse_2", Name: "fs_save_policy", Input: jsontext.Value(`{"filename":"b.yaml"}`)}},
	}}
	assert.Equal(t, "fs.save_policy", names.ToolName("fs_save_policy"), "the names hold for every attempt")
	repair := RepairRequest(orig, turn, map[string][]string{"tooluse_1": {`/: missing required property "filename"`, "/replicas: expected integer, got string"}})
	got, err := bedrock.MarshalRequest(repair)
	require.NoError(t, err)
	assert.Equal(t, `{"messages":[`+
		`{"role":"user","content":[{"text":"Save two policies."}]},`+
		`{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"They want two.","signature":"c2ln"}}},{"text":"Saving both."},`+
		`{"toolUse":{"toolUseId":"tooluse_1","name":"fs_save_policy","input":{"replicas":"3"}}},`+
		`{"toolUse":{"toolUseId":"tooluse_2","name":"fs_save_policy","input":{"filename":"b.yaml"}}}]},`+
		`{"role":"user","content":[`+
		`{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"Invalid arguments for fs_save_policy: /: missing required property \"filename\"; /replicas: expected integer, got string. Call fs_save_policy again with corrected arguments."}],"status":"error"}},`+
		`{"toolResult":{"toolUseId":"tooluse_2","content":[{"text":"Not run: other calls in this turn had invalid arguments. Repeat this call if it is still needed."}],"status":"error"}}]}],`+
		`"system":[{"text":"Be brief."}],`+
		`"toolConfig":{"tools":[{"toolSpec":{"name":"fs_save_policy","inputSchema":{"json":{"type":"object","properties":{"filename":{"type":"string"},"replicas":{"type":"integer"}},"required":["filename"]}}}}]}}`,
		string(got))

	after, err := bedrock.MarshalRequest(orig)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the original request is not modified")

	// Attempt 3 carries only attempt 2's turn after the original request.
	turn2 := bedrock.Message{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "tooluse_3", Name: "fs_save_policy", Input: jsontext.Value(`{}`)}}}}
	third := RepairRequest(orig, turn2, map[string][]string{"tooluse_3": {`/: missing required property "filename"`}})
	require.Len(t, third.Messages, 3)
	assert.Equal(t, "tooluse_3", third.Messages[2].Content[0].ToolResult.ToolUseID)
}

// TestRepairRequestAfterPrefill: a request that ended with the assistant's own start gets
// the model's turn appended to it, so roles still alternate.
func TestRepairRequestAfterPrefill(t *testing.T) {
	t.Parallel()
	start := "{"
	orig := &bedrock.ConverseRequest{Messages: []bedrock.Message{
		{Role: bedrock.RoleUser, Content: []bedrock.ContentBlock{bedrock.TextBlock("go")}},
		{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{{Text: &start}}},
	}}
	turn := bedrock.Message{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t1", Name: "x", Input: jsontext.Value(`{}`)}}}}
	out := RepairRequest(orig, turn, map[string][]string{"t1": {"/a: expected string, got number"}})
	require.Len(t, out.Messages, 3)
	assert.Len(t, out.Messages[1].Content, 2)
	assert.Len(t, orig.Messages[1].Content, 1, "not modified")
	assert.Equal(t, bedrock.RoleUser, out.Messages[2].Role)
}
