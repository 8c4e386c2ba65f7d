package translate

import (
	"testing"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/jsonapi"
)

// restBenchBody is a typical REST agent turn (3 tools, a tool round trip), as the gollm
// client sends it.
const restBenchBody = `{
  "model": "us.anthropic.claude-sonnet-4-20250514-v1:0",
  "messages": [
    {"role": "system", "content": "You are a Kubernetes policy assistant. You write Kyverno policies, validate them against sample resources and save them to the user's repository."},
    {"role": "user", "content": "Write a policy that requires every Pod to carry the labels app.kubernetes.io/name and team, and save it as require-labels.yaml."},
    {"role": "assistant", "content": "I'll draft the policy and check it against a sample Pod first.", "tool_calls": [
      {"id": "tooluse_8KtZsHh3QeO1", "type": "function", "function": {"name": "validate_policy", "arguments": "{\"policy\":\"apiVersion: kyverno.io/v1\\nkind: ClusterPolicy\\n\",\"resource\":\"apiVersion: v1\\nkind: Pod\\n\"}"}},
      {"id": "tooluse_a91LmQx0TgWc", "type": "function", "function": {"name": "list_files", "arguments": "{\"path\":\"policies/\",\"recursive\":false}"}}
    ]},
    {"role": "tool", "tool_call_id": "tooluse_8KtZsHh3QeO1", "content": "{\"valid\":false,\"violations\":[{\"rule\":\"check-labels\",\"message\":\"label 'team' is required\"}]}"},
    {"role": "tool", "tool_call_id": "tooluse_a91LmQx0TgWc", "content": "{\"files\":[\"policies/disallow-latest.yaml\"]}"},
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
  "max_tokens": 4096, "temperature": 0.2
}`

// BenchmarkRESTRequest is the whole request path of a REST call before the upstream:
// decode the body, translate it, marshal the Converse body.
func BenchmarkRESTRequest(b *testing.B) {
	body := []byte(restBenchBody)
	model := capabilities.Lookup(testModel)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req, err := jsonapi.DecodeChatRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		out, _, err := Request(req, model)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bedrock.MarshalRequest(out); err != nil {
			b.Fatal(err)
		}
	}
}
