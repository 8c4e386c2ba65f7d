package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsonenc"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// RequestFromProto maps the API's request (gRPC, or REST decoded by jsonapi) to the chat
// model. It resolves the shapes the chat model does not have: the wrapped and flat tool
// forms, a schema given as a Struct, tool_choice as a google.protobuf.Value, and the nil
// elements a Go caller can build. What it refuses wraps translate.ErrInvalidRequest and
// names the field by its JSON path, as the translator's errors do.
func RequestFromProto(req *llmgatewayv1.ChatRequest) (*chat.Request, error) {
	if req == nil {
		req = &llmgatewayv1.ChatRequest{}
	}
	out := &chat.Request{
		Model:       req.GetModel(),
		Provider:    req.GetProvider(),
		ClientType:  req.GetClientType(),
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stop:        req.GetStop(),
	}
	var err error
	if out.Tools, err = toolsFromProto(req.GetTools()); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = toolChoiceFromProto(req.GetToolChoice()); err != nil {
		return nil, err
	}
	if out.Messages, err = messagesFromProto(req.GetMessages()); err != nil {
		return nil, err
	}
	return out, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{translate.ErrInvalidRequest}, args...)...)
}

func messagesFromProto(msgs []*llmgatewayv1.Message) ([]chat.Message, error) {
	out := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return nil, invalidf("messages[%d] is empty", i)
		}
		out[i] = chat.Message{Role: m.GetRole(), Content: m.GetContent(), ToolCallID: m.GetToolCallId(), Name: m.GetName()}
		for j, p := range m.GetParts() {
			if p == nil {
				return nil, invalidf("messages[%d].content[%d] is empty", i, j)
			}
			part := chat.Part{Type: p.GetType(), Text: p.GetText()}
			if u := p.GetImageUrl(); u != nil {
				part.Image = &chat.ImageURL{URL: u.GetUrl(), Detail: u.GetDetail()}
			}
			out[i].Parts = append(out[i].Parts, part)
		}
		for j, tc := range m.GetToolCalls() {
			switch {
			case tc == nil:
				return nil, invalidf("messages[%d].tool_calls[%d] is empty", i, j)
			case tc.GetFunction() == nil:
				return nil, invalidf("messages[%d].tool_calls[%d].function is missing", i, j)
			}
			out[i].ToolCalls = append(out[i].ToolCalls, chat.ToolCall{
				ID: tc.GetId(), Type: tc.GetType(), Name: tc.GetFunction().GetName(), Arguments: tc.GetFunction().GetArguments(),
			})
		}
	}
	return out, nil
}

// toolsFromProto resolves the wrapped ({type, function}) and flat ({name, description,
// parameters}) forms; the wrapped form wins (docs/PROTOCOL.md 3), and parameters_json wins
// over parameters.
func toolsFromProto(tools []*llmgatewayv1.Tool) ([]chat.Tool, error) {
	out := make([]chat.Tool, 0, len(tools))
	for i, t := range tools {
		if t == nil {
			return nil, invalidf("tools[%d] is empty", i)
		}
		tool := chat.Tool{Type: t.GetType(), Name: t.GetName(), Description: t.GetDescription()}
		text, schema := t.GetParametersJson(), t.GetParameters()
		path := "tools[" + strconv.Itoa(i) + "]"
		if f := t.GetFunction(); f != nil {
			tool.Name, tool.Description, tool.Wrapped = f.GetName(), f.GetDescription(), true
			text, schema = f.GetParametersJson(), f.GetParameters()
			path += ".function"
		}
		switch {
		case text != "":
			tool.Parameters = []byte(text)
		case len(schema.GetFields()) > 0:
			var err error
			if tool.Parameters, err = structSchema(schema); err != nil {
				return nil, invalidf("%s.parameters %s", path, err.Error())
			}
		}
		out = append(out, tool)
	}
	return out, nil
}

// structSchema writes a schema given as a Struct (gRPC clients) as JSON text.
// protojson's output is deliberately unstable byte-wise, and structpb.AsMap+json.Marshal
// HTML-escapes, so a small writer of our own gives the same bytes for the same schema
// (stable request bodies, stable prompt cache, stable goldens). A Struct has no key order
// and float64 numbers, so keys are sorted and numbers written as encoding/json would. A
// missing root "type" is added as "object" among the sorted keys (Bedrock's rule 11), so
// the translator, which would insert it first, leaves these bytes as they are; it checks
// a type that is there.
func structSchema(s *structpb.Struct) ([]byte, error) {
	fields := s.GetFields()
	if _, ok := fields["type"]; !ok {
		fields = maps.Clone(fields)
		fields["type"] = structpb.NewStringValue("object")
	}
	return appendFields(make([]byte, 0, 256), fields, 0)
}

// maxSchemaDepth bounds recursion on a schema (protojson's own default limit is 10000).
const maxSchemaDepth = 10000

// schemaError is a reason a Struct schema is refused; the caller adds the path.
type schemaError string

func (e schemaError) Error() string { return string(e) }

func appendFields(b []byte, fields map[string]*structpb.Value, depth int) ([]byte, error) {
	if depth > maxSchemaDepth {
		return nil, schemaError("is nested too deeply")
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(fields)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, fields[k], depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendValue(b []byte, v *structpb.Value, depth int) ([]byte, error) {
	if depth > maxSchemaDepth {
		return nil, schemaError("is nested too deeply")
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return jsonenc.AppendString(b, k.StringValue), nil
	case *structpb.Value_NumberValue:
		f := k.NumberValue
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, schemaError("holds a number that is not finite")
		}
		// Same spelling as encoding/json: integers without exponent up to 1e21.
		if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
			b = strconv.AppendFloat(b, f, 'e', -1, 64)
			// "1e-07" → "1e-7", as encoding/json writes it.
			if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
				b[n-2] = b[n-1]
				b = b[:n-1]
			}
			return b, nil
		}
		return strconv.AppendFloat(b, f, 'f', -1, 64), nil
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue), nil
	case *structpb.Value_StructValue:
		return appendFields(b, k.StructValue.GetFields(), depth)
	case *structpb.Value_ListValue:
		b = append(b, '[')
		for i, e := range k.ListValue.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	default: // null, or a Value with no kind set
		return append(b, "null"...), nil
	}
}

// toolChoiceFromProto reads tool_choice: "auto" | "none" | "required" | "any" (= required)
// | {"type":"function","function":{"name":"X"}}; the object forms {"type":"auto"} (and
// none, required, any) and {"type":"function","name":"X"} are accepted too. A missing
// value, null or "" is unset.
func toolChoiceFromProto(v *structpb.Value) (chat.ToolChoice, error) {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return chat.ToolChoice{}, nil
	case *structpb.Value_StringValue:
		mode, ok := choiceMode(k.StringValue)
		if !ok {
			return chat.ToolChoice{}, invalidf(`tool_choice %s is not one of "auto", "none", "required", "any" or a function object`, clip.Quote(k.StringValue))
		}
		return chat.ToolChoice{Mode: mode}, nil
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		typ, isString := fields["type"].GetKind().(*structpb.Value_StringValue)
		fn := fields["function"].GetStructValue()
		switch {
		case isString && typ.StringValue == "function", !isString && fields["type"] == nil && fn != nil:
			n, ok := fn.GetFields()["name"].GetKind().(*structpb.Value_StringValue)
			if !ok {
				n, ok = fields["name"].GetKind().(*structpb.Value_StringValue)
			}
			if !ok || n.StringValue == "" {
				return chat.ToolChoice{}, invalidf("tool_choice.function.name is required when tool_choice.type is \"function\"")
			}
			return chat.ToolChoice{Mode: chat.ChoiceFunction, Function: n.StringValue}, nil
		case isString:
			if mode, ok := choiceMode(typ.StringValue); ok {
				return chat.ToolChoice{Mode: mode}, nil
			}
			return chat.ToolChoice{}, invalidf(`tool_choice.type %s is not one of "auto", "none", "required", "any", "function"`, clip.Quote(typ.StringValue))
		default:
			return chat.ToolChoice{}, invalidf(`tool_choice.type is required`)
		}
	default:
		return chat.ToolChoice{}, invalidf(`tool_choice must be a string or an object`)
	}
}

func choiceMode(s string) (string, bool) {
	switch s {
	case "":
		return "", true
	case "auto":
		return chat.ChoiceAuto, true
	case "none":
		return chat.ChoiceNone, true
	case "required", "any":
		return chat.ChoiceRequired, true
	}
	return "", false
}

// ResponseToProto maps an answer to the API's response.
func ResponseToProto(r *chat.Response) *llmgatewayv1.ChatResponse {
	out := &llmgatewayv1.ChatResponse{
		Message:      r.Text,
		FinishReason: string(r.Finish),
		Usage:        usageToProto(r.Usage),
		Metadata: &llmgatewayv1.ResponseMetadata{
			Model:      r.Model,
			StopReason: r.StopReason,
			LatencyMs:  int32(r.LatencyMs),
			RequestId:  r.RequestID,
		},
	}
	if len(r.ToolCalls) > 0 {
		out.ToolCalls = make([]*llmgatewayv1.ToolCall, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			out.ToolCalls[i] = &llmgatewayv1.ToolCall{Id: tc.ID, Type: tc.Type, Function: &llmgatewayv1.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}}
		}
	}
	return out
}

func usageToProto(u chat.Usage) *llmgatewayv1.Usage {
	return &llmgatewayv1.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// Event types of the API's stream (docs/PROTOCOL.md 3.2).
const (
	eventContent  = "content"
	eventToolCall = "tool_call"
	eventDone     = "done"
	eventError    = "error"
)

// EventToProto maps a stream event to the API's; nil for EventToolCallEnd, which only the
// chunked format uses. A done event whose usage is all zeros says none: Bedrock sent none.
func EventToProto(ev chat.Event) *llmgatewayv1.ChatStreamEvent {
	switch ev.Kind {
	case chat.EventContent:
		return &llmgatewayv1.ChatStreamEvent{Type: eventContent, Delta: ev.Text}
	case chat.EventToolCall:
		tc := ev.ToolCall
		return &llmgatewayv1.ChatStreamEvent{Type: eventToolCall, Index: int32(ev.Index), ToolCall: &llmgatewayv1.ToolCall{
			Id: tc.ID, Type: tc.Type, Function: &llmgatewayv1.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		}}
	case chat.EventDone:
		out := &llmgatewayv1.ChatStreamEvent{Type: eventDone, FinishReason: string(ev.Finish)}
		if ev.Usage != (chat.Usage{}) {
			out.Usage = usageToProto(ev.Usage)
		}
		return out
	}
	return nil
}

// errorEvent is the last event of a stream whose upstream failed after it started.
func errorEvent(c errClass) *llmgatewayv1.ChatStreamEvent {
	return &llmgatewayv1.ChatStreamEvent{Type: eventError, Error: &llmgatewayv1.StreamError{Code: codeName(c.code), Message: c.message}}
}
