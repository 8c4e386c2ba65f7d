package jsonapi

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	v1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func jsonValid(b []byte) bool { return json.Valid(b) }

// benchBody is a realistic agent request: 3 tools, 6 messages with a tool round trip.
// It uses only shapes protojson can also read (string content, string arguments), so the
// two decoders can be compared on the same bytes.
const benchBody = `{
  "model": "us.anthropic.claude-sonnet-4-20250514-v1:0",
  "messages": [
    {"role": "system", "content": "You are a Kubernetes policy assistant. You write Kyverno policies, validate them against sample resources and save them to the user's repository. Always explain what a policy does before saving it."},
    {"role": "user", "content": "Write a policy that requires every Pod to carry the labels app.kubernetes.io/name and team, and save it as require-labels.yaml."},
    {"role": "assistant", "content": "I'll draft the policy and check it against a sample Pod first.", "tool_calls": [
      {"id": "tooluse_8KtZsHh3QeO1", "type": "function", "function": {"name": "validate_policy", "arguments": "{\"policy\":\"apiVersion: kyverno.io/v1\\nkind: ClusterPolicy\\nmetadata:\\n  name: require-labels\\n\",\"resource\":\"apiVersion: v1\\nkind: Pod\\nmetadata:\\n  name: nginx\\n\"}"}},
      {"id": "tooluse_a91LmQx0TgWc", "type": "function", "function": {"name": "list_files", "arguments": "{\"path\":\"policies/\",\"recursive\":false}"}}
    ]},
    {"role": "tool", "tool_call_id": "tooluse_8KtZsHh3QeO1", "content": "{\"valid\":false,\"violations\":[{\"rule\":\"check-labels\",\"message\":\"label 'team' is required\"}]}"},
    {"role": "tool", "tool_call_id": "tooluse_a91LmQx0TgWc", "content": "{\"files\":[\"policies/disallow-latest.yaml\",\"policies/require-probes.yaml\"]}"},
    {"role": "user", "content": "Looks right: the sample Pod should fail. Go ahead and save it."}
  ],
  "tools": [
    {"type": "function", "function": {"name": "validate_policy", "description": "Validate a Kyverno policy against a Kubernetes resource and report violations.",
      "parameters": {"type": "object", "properties": {"policy": {"type": "string", "description": "Policy YAML"}, "resource": {"type": "string", "description": "Resource YAML"}}, "required": ["policy", "resource"]}}},
    {"type": "function", "function": {"name": "save_policy", "description": "Save a policy file in the repository.",
      "parameters": {"type": "object", "properties": {"filename": {"type": "string", "pattern": "^[a-z0-9-]+\\.yaml$"}, "content": {"type": "string"}, "overwrite": {"type": "boolean", "default": false}}, "required": ["filename", "content"]}}},
    {"type": "function", "function": {"name": "list_files", "description": "List files under a path.",
      "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "recursive": {"type": "boolean"}, "max_results": {"type": "integer", "minimum": 1, "maximum": 1000}}, "required": ["path"]}}}
  ],
  "tool_choice": "auto",
  "stream": true,
  "max_tokens": 4096, "temperature": 0.2, "top_p": 0.9, "stop": ["END"]
}`

// BenchmarkDecodeChatRequest compares the hand-written decoder with protojson on the same
// body. protojson is here for the report only: it cannot read the contract's polymorphic
// fields, so it is not an alternative.
func BenchmarkDecodeChatRequest(b *testing.B) {
	body := []byte(benchBody)
	b.Run("jsonapi", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := DecodeChatRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		opts := protojson.UnmarshalOptions{DiscardUnknown: true}
		for b.Loop() {
			var req v1.ChatRequest
			if err := opts.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var benchResponse = &v1.ChatResponse{
	Message: "I'll save the policy for you. It requires the labels app.kubernetes.io/name and team on every Pod — 日本語 <&>.",
	ToolCalls: []*v1.ToolCall{{
		Id: "tooluse_abc", Type: "function",
		Function: &v1.FunctionCall{Name: "save_policy", Arguments: `{"filename":"require-labels.yaml","content":"apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"}`},
	}},
	FinishReason: "tool_calls",
	Usage:        &v1.Usage{PromptTokens: 1200, CompletionTokens: 300, TotalTokens: 1500},
	Metadata: &v1.ResponseMetadata{
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", StopReason: "tool_use",
		LatencyMs: 812, RequestId: "2b1f7c3e-9d7a-4a0e-8f7e-0c1d2e3f4a5b",
	},
}

func BenchmarkAppendChatResponse(b *testing.B) {
	b.Run("jsonapi", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendChatResponse(buf[:0], benchResponse)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		opts := protojson.MarshalOptions{UseProtoNames: true}
		for b.Loop() {
			if _, err := opts.Marshal(benchResponse); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAppendStreamEvent(b *testing.B) {
	events := []*v1.ChatStreamEvent{
		{Type: "content", Delta: "Analyzing your request: the policy needs two labels..."},
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Id: "tooluse_abc", Type: "function", Function: &v1.FunctionCall{Name: "save_policy"}}},
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Function: &v1.FunctionCall{Arguments: `{"filename":"require-`}}},
		{Type: "done", FinishReason: "tool_calls", Usage: &v1.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}},
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for _, e := range events {
			buf = AppendStreamEvent(buf[:0], e)
		}
	}
}
