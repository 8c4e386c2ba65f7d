package grpcapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// TestResponseFormatOverGRPC: response_format reaches the chat model with its schema as
// JSON text: schema_json as written, else the Struct with sorted keys, as a tool's
// parameters (docs/PROTOCOL.md 6, 13.3).
func TestResponseFormatOverGRPC(t *testing.T) {
	t.Parallel()
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "required": []any{"b"},
		"properties": map[string]any{"b": map[string]any{"type": "integer"}, "a": map[string]any{"type": "string"}}})
	require.NoError(t, err)
	for name, tt := range map[string]struct {
		in   *llmgatewayv1.ResponseFormat
		want *chat.ResponseFormat
	}{
		"absent": {nil, nil},
		"text":   {&llmgatewayv1.ResponseFormat{Type: "text"}, &chat.ResponseFormat{Type: chat.FormatText}},
		"a Struct, sorted": {&llmgatewayv1.ResponseFormat{Type: "json_schema", JsonSchema: &llmgatewayv1.JSONSchemaFormat{
			Name: "w", Description: "d", Schema: schema, Strict: true}},
			&chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "w", Description: "d", Strict: true,
				Schema: []byte(`{"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"],"type":"object"}`)}},
		"schema_json wins, as written": {&llmgatewayv1.ResponseFormat{Type: "json_schema", JsonSchema: &llmgatewayv1.JSONSchemaFormat{
			Schema: schema, SchemaJson: `{"type": "object", "properties": {"n": {"maximum": 12345678901234567890}}}`}},
			&chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type": "object", "properties": {"n": {"maximum": 12345678901234567890}}}`)}},
		"no schema": {&llmgatewayv1.ResponseFormat{Type: "json_schema", JsonSchema: &llmgatewayv1.JSONSchemaFormat{Name: "w"}},
			&chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "w"}},
	} {
		got, err := fromProto(&llmgatewayv1.ChatRequest{ResponseFormat: tt.in})
		require.NoError(t, err, name)
		assert.Equal(t, tt.want, got.ResponseFormat, name)
	}
}
