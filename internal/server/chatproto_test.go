package server

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/jsonapi"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// structTool is a request with one wrapped tool whose parameters are the Struct in
// protojson form ("" = none).
func structTool(t *testing.T, in string) *llmgatewayv1.ChatRequest {
	t.Helper()
	var s *structpb.Struct
	if in != "" {
		s = &structpb.Struct{}
		require.NoError(t, protojson.Unmarshal([]byte(in), s))
	}
	return &llmgatewayv1.ChatRequest{
		Messages: []*llmgatewayv1.Message{{Role: "user", Content: "hi"}},
		Tools:    []*llmgatewayv1.Tool{{Type: "function", Function: &llmgatewayv1.FunctionDefinition{Name: "f", Parameters: s}}},
	}
}

// TestStructSchema: the writer for schemas that arrive as a Struct (gRPC clients).
func TestStructSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{name: "nil"},
		{name: "empty", in: `{}`},
		{name: "type added among the sorted keys", in: `{"properties":{"a":{"type":"string"}}}`, want: `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{name: "keys sorted, numbers plain", in: `{"type":"object","z":1,"a":[1.5,2,1e21,1e-7,-0.5,true,null],"m":{"y":"<&>日本語","x":"\"\\\n\u0001"}}`,
			want: `{"a":[1.5,2,1e+21,1e-7,-0.5,true,null],"m":{"x":"\"\\\n\u0001","y":"<&>日本語"},"type":"object","z":1}`},
		{name: "a root type is left to the translator", in: `{"type":"array"}`, want: `{"type":"array"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := RequestFromProto(structTool(t, tt.in))
			require.NoError(t, err)
			got := req.Tools[0].Parameters
			if tt.want == "" {
				assert.Nil(t, got, "no schema: the translator sends an object with no properties")
				return
			}
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
	t.Run("not finite", func(t *testing.T) {
		t.Parallel()
		req := structTool(t, `{}`)
		req.Tools[0].GetFunction().Parameters.Fields["max"] = structpb.NewNumberValue(math.Inf(1))
		_, err := RequestFromProto(req)
		require.ErrorIs(t, err, translate.ErrInvalidRequest)
		assert.EqualError(t, err, "invalid request: tools[0].function.parameters holds a number that is not finite")
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		t.Parallel()
		got, err := structSchema(&structpb.Struct{Fields: map[string]*structpb.Value{"d": structpb.NewStringValue("a\xffb")}})
		require.NoError(t, err)
		assert.Equal(t, "{\"d\":\"a\uFFFDb\",\"type\":\"object\"}", string(got))
	})
	t.Run("escapes as jsonapi.AppendString", func(t *testing.T) {
		t.Parallel()
		got, err := structSchema(&structpb.Struct{Fields: map[string]*structpb.Value{"d": structpb.NewStringValue("\b\f\u2028<&>")}})
		require.NoError(t, err)
		assert.Equal(t, `{"d":"\b\f\u2028<&>","type":"object"}`, string(got))
	})
}

// TestStructSchemaRootType: a Struct whose root type is not "object" gets the translator's
// error, named by the tool's path.
func TestStructSchemaRootType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"type":"array"}`:           `invalid request: tools[0].function.parameters must be a JSON Schema whose root "type" is "object", not "array"`,
		`{"type":["object","null"]}`: `invalid request: tools[0].function.parameters must be a JSON Schema whose root "type" is "object"`,
	} {
		req, err := RequestFromProto(structTool(t, in))
		require.NoError(t, err)
		_, _, err = translate.Request(req, capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0"))
		assert.EqualError(t, err, want)
	}
}

// TestToolForms: the wrapped form wins over the flat one, parameters_json over parameters.
func TestToolForms(t *testing.T) {
	t.Parallel()
	st, err := structpb.NewStruct(map[string]any{"type": "object"})
	require.NoError(t, err)
	req, err := RequestFromProto(&llmgatewayv1.ChatRequest{Tools: []*llmgatewayv1.Tool{
		{Name: "flat", Description: "d", ParametersJson: `{"a":1}`, Parameters: st},
		{Type: "function", Name: "ignored", Function: &llmgatewayv1.FunctionDefinition{Name: "wrapped", Parameters: st}},
	}})
	require.NoError(t, err)
	assert.Equal(t, []chat.Tool{
		{Name: "flat", Description: "d", Parameters: []byte(`{"a":1}`)},
		{Type: "function", Name: "wrapped", Parameters: []byte(`{"type":"object"}`), Wrapped: true},
	}, req.Tools)
}

func TestToolChoiceFromProto(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string // protojson of a google.protobuf.Value; "" = missing
		want chat.ToolChoice
		err  string
	}{
		{in: ""},
		{in: `null`},
		{in: `""`},
		{in: `"auto"`, want: chat.ToolChoice{Mode: chat.ChoiceAuto}},
		{in: `"none"`, want: chat.ToolChoice{Mode: chat.ChoiceNone}},
		{in: `"required"`, want: chat.ToolChoice{Mode: chat.ChoiceRequired}},
		{in: `"any"`, want: chat.ToolChoice{Mode: chat.ChoiceRequired}},
		{in: `{"type":"auto"}`, want: chat.ToolChoice{Mode: chat.ChoiceAuto}},
		{in: `{"type":"none"}`, want: chat.ToolChoice{Mode: chat.ChoiceNone}},
		{in: `{"type":"any"}`, want: chat.ToolChoice{Mode: chat.ChoiceRequired}},
		{in: `{"type":"function","function":{"name":"f"}}`, want: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "f"}},
		{in: `{"function":{"name":"f"}}`, want: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "f"}},
		{in: `{"type":"function","name":"f"}`, want: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "f"}},
		{in: `{"type":"function"}`, err: `tool_choice.function.name is required when tool_choice.type is "function"`},
		{in: `{"type":"function","function":{"name":""}}`, err: `tool_choice.function.name is required when tool_choice.type is "function"`},
		{in: `{"type":"tool_x"}`, err: `tool_choice.type "tool_x" is not one of "auto", "none", "required", "any", "function"`},
		{in: `{}`, err: "tool_choice.type is required"},
		{in: `"always"`, err: `tool_choice "always" is not one of "auto", "none", "required", "any" or a function object`},
		{in: `3`, err: "tool_choice must be a string or an object"},
		{in: `true`, err: "tool_choice must be a string or an object"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var v *structpb.Value
			if tt.in != "" {
				v = &structpb.Value{}
				require.NoError(t, protojson.Unmarshal([]byte(tt.in), v))
			}
			req, err := RequestFromProto(&llmgatewayv1.ChatRequest{ToolChoice: v})
			if tt.err != "" {
				require.ErrorIs(t, err, translate.ErrInvalidRequest)
				assert.EqualError(t, err, "invalid request: "+tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, req.ToolChoice)
		})
	}
}

// TestRequestFromProtoRefuses: the shapes the chat model has no room for.
func TestRequestFromProtoRefuses(t *testing.T) {
	t.Parallel()
	user := &llmgatewayv1.Message{Role: "user", Content: "hi"}
	tests := map[string]*llmgatewayv1.ChatRequest{
		"messages[1] is empty":                          {Messages: []*llmgatewayv1.Message{user, nil}},
		"messages[0].content[0] is empty":               {Messages: []*llmgatewayv1.Message{{Role: "user", Parts: []*llmgatewayv1.ContentPart{nil}}}},
		"tools[0] is empty":                             {Messages: []*llmgatewayv1.Message{user}, Tools: []*llmgatewayv1.Tool{nil}},
		"messages[1].tool_calls[0] is empty":            {Messages: []*llmgatewayv1.Message{user, {Role: "assistant", ToolCalls: []*llmgatewayv1.ToolCall{nil}}}},
		"messages[1].tool_calls[0].function is missing": {Messages: []*llmgatewayv1.Message{user, {Role: "assistant", ToolCalls: []*llmgatewayv1.ToolCall{{Id: "a"}}}}},
	}
	for want, req := range tests {
		_, err := RequestFromProto(req)
		require.ErrorIs(t, err, translate.ErrInvalidRequest)
		assert.EqualError(t, err, "invalid request: "+want)
	}
}

// TestOddProtoShapes: shapes protojson never produces but Go callers can are converted and
// translated, or refused with a sentinel, never a panic.
func TestOddProtoShapes(t *testing.T) {
	t.Parallel()
	user := &llmgatewayv1.Message{Role: "user", Content: "hi"}
	tests := map[string]*llmgatewayv1.ChatRequest{
		"nil request":       nil,
		"nil image_url":     {Messages: []*llmgatewayv1.Message{{Role: "user", Parts: []*llmgatewayv1.ContentPart{{Type: "image_url"}}}}},
		"nil struct":        {Messages: []*llmgatewayv1.Message{user}, Tools: []*llmgatewayv1.Tool{{Function: &llmgatewayv1.FunctionDefinition{Name: "x", Parameters: nil}}}},
		"empty struct":      {Messages: []*llmgatewayv1.Message{user}, Tools: []*llmgatewayv1.Tool{{Name: "x", Parameters: &structpb.Struct{}}}},
		"nil field values":  {Messages: []*llmgatewayv1.Message{user}, Tools: []*llmgatewayv1.Tool{{Name: "x", Parameters: &structpb.Struct{Fields: map[string]*structpb.Value{"type": nil, "x": {}}}}}},
		"empty choice":      {Messages: []*llmgatewayv1.Message{user}, ToolChoice: &structpb.Value{}},
		"choice list":       {Messages: []*llmgatewayv1.Message{user}, ToolChoice: structpb.NewListValue(&structpb.ListValue{})},
		"choice nil struct": {Messages: []*llmgatewayv1.Message{user}, ToolChoice: &structpb.Value{Kind: &structpb.Value_StructValue{}}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			creq, err := RequestFromProto(req)
			if err == nil {
				_, _, err = translate.Request(creq, capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0"))
			}
			if err != nil {
				require.True(t, errors.Is(err, translate.ErrInvalidRequest) || errors.Is(err, translate.ErrUnsupported), err.Error())
			}
		})
	}
}

func TestRequestFromProto(t *testing.T) {
	t.Parallel()
	req := &llmgatewayv1.ChatRequest{
		Model: "m", Provider: "bedrock", ClientType: "cli", Stop: []string{"x"},
		Messages: []*llmgatewayv1.Message{
			{Role: "user", Content: "c", Name: "n", Parts: []*llmgatewayv1.ContentPart{
				{Type: "text", Text: "t"}, {ImageUrl: &llmgatewayv1.ImageURL{Url: "data:", Detail: "low"}}}},
			{Role: "assistant", ToolCalls: []*llmgatewayv1.ToolCall{{Id: "i", Type: "function", Function: &llmgatewayv1.FunctionCall{Name: "f", Arguments: "{}"}}}},
			{Role: "tool", ToolCallId: "i", Content: "r"},
		},
	}
	got, err := RequestFromProto(req)
	require.NoError(t, err)
	want := &chat.Request{
		Model: "m", Provider: "bedrock", ClientType: "cli", Stop: []string{"x"},
		Messages: []chat.Message{
			{Role: "user", Content: "c", Name: "n", Parts: []chat.Part{
				{Type: "text", Text: "t"}, {Image: &chat.ImageURL{URL: "data:", Detail: "low"}}}},
			{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "i", Type: "function", Name: "f", Arguments: "{}"}}},
			{Role: "tool", ToolCallID: "i", Content: "r"},
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestEventToProto(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   chat.Event
		want *llmgatewayv1.ChatStreamEvent
	}{
		{chat.Event{Kind: chat.EventContent, Text: "a"}, &llmgatewayv1.ChatStreamEvent{Type: "content", Delta: "a"}},
		{chat.Event{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{ID: "i", Type: "function", Name: "f"}},
			&llmgatewayv1.ChatStreamEvent{Type: "tool_call", Index: 1, ToolCall: &llmgatewayv1.ToolCall{Id: "i", Type: "function", Function: &llmgatewayv1.FunctionCall{Name: "f"}}}},
		{chat.Event{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: "{}"}},
			&llmgatewayv1.ChatStreamEvent{Type: "tool_call", Index: 1, ToolCall: &llmgatewayv1.ToolCall{Function: &llmgatewayv1.FunctionCall{Arguments: "{}"}}}},
		{chat.Event{Kind: chat.EventToolCallEnd, Index: 1}, nil},
		{chat.Event{Kind: chat.EventDone, Finish: chat.FinishLength}, &llmgatewayv1.ChatStreamEvent{Type: "done", FinishReason: "length"}},
		{chat.Event{Kind: chat.EventDone, Finish: chat.FinishStop, Usage: chat.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
			&llmgatewayv1.ChatStreamEvent{Type: "done", FinishReason: "stop", Usage: &llmgatewayv1.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, EventToProto(tt.in), protocmp.Transform()); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestErrorEvent(t *testing.T) {
	t.Parallel()
	got := string(jsonapi.AppendStreamEvent(nil, errorEvent(errClass{code: codes.ResourceExhausted, message: "slow down"})))
	require.Equal(t, `{"type":"error","error":{"code":"resource_exhausted","message":"slow down"}}`+"\n", got)
}
