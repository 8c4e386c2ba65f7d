package grpcapi

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// fromProto maps a ChatRequest into the chat model. Values are checked by the translator,
// as for every surface; an unknown enum value reaches it as its number and is refused
// there, naming the field. The errors here are a tool choice mode the gateway does not
// know (it would otherwise read as auto) and a tool schema with a number JSON cannot hold.
func fromProto(in *llmgatewayv1.ChatRequest) (*chat.Request, error) {
	choice, err := toolChoice(in.GetToolChoice())
	if err != nil {
		return nil, err
	}
	req := &chat.Request{
		Model:       in.GetModel(),
		Provider:    in.GetProvider(),
		ClientType:  in.GetClientType(),
		ToolChoice:  choice,
		MaxTokens:   in.MaxTokens,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stop:        in.GetStop(),

		ParallelToolCalls: in.ParallelToolCalls,
		MaxToolRounds:     in.MaxToolRounds,

		ReasoningEffort: in.GetReasoningEffort(),
		StreamReasoning: in.GetStreamReasoning(),
		ToolValidation:  in.GetToolValidation(),
	}
	if t := in.GetThinking(); t != nil {
		req.Thinking = &chat.Thinking{Type: t.GetType(), BudgetTokens: t.BudgetTokens}
	}
	if req.ResponseFormat, err = responseFormat(in.GetResponseFormat()); err != nil {
		return nil, err
	}
	if msgs := in.GetMessages(); len(msgs) > 0 {
		req.Messages = make([]chat.Message, len(msgs))
		for i, m := range msgs {
			req.Messages[i] = message(m)
		}
	}
	if tools := in.GetTools(); len(tools) > 0 {
		req.Tools = make([]chat.Tool, len(tools))
		for i, t := range tools {
			var err error
			if req.Tools[i], err = tool(t); err != nil {
				path := fmt.Sprintf("tools[%d]", i)
				if req.Tools[i].Wrapped {
					path += ".function"
				}
				return nil, fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "%s.parameters %v", path, err)
			}
		}
	}
	return req, nil
}

// roleOf spells a Role as the chat model does: ROLE_USER is "user".
func roleOf(r llmgatewayv1.Role) string {
	switch r {
	case llmgatewayv1.Role_ROLE_UNSPECIFIED:
		return ""
	case llmgatewayv1.Role_ROLE_SYSTEM:
		return chat.RoleSystem
	case llmgatewayv1.Role_ROLE_DEVELOPER:
		return chat.RoleDeveloper
	case llmgatewayv1.Role_ROLE_USER:
		return chat.RoleUser
	case llmgatewayv1.Role_ROLE_ASSISTANT:
		return chat.RoleAssistant
	case llmgatewayv1.Role_ROLE_TOOL:
		return chat.RoleTool
	}
	return r.String() // its number, which the translator refuses naming the field
}

func message(m *llmgatewayv1.Message) chat.Message {
	out := chat.Message{Role: roleOf(m.GetRole()), Content: m.GetContent(), ToolCallID: m.GetToolCallId(), Name: m.GetName(),
		CacheControl: cacheControl(m.GetCacheControl())}
	if parts := m.GetParts(); len(parts) > 0 {
		out.Parts = make([]chat.Part, len(parts))
		for i, p := range parts {
			switch v := p.GetPart().(type) {
			case *llmgatewayv1.ContentPart_Text:
				out.Parts[i] = chat.Part{Type: chat.PartText, Text: v.Text}
			case *llmgatewayv1.ContentPart_ImageUrl:
				out.Parts[i] = chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: v.ImageUrl.GetUrl(), Detail: v.ImageUrl.GetDetail()}}
			case *llmgatewayv1.ContentPart_File:
				f := v.File
				out.Parts[i] = chat.Part{Type: chat.PartFile, File: &chat.File{Data: f.GetFileData(), Filename: f.GetFilename(), FileID: f.GetFileId()}}
			}
			out.Parts[i].CacheControl = cacheControl(p.GetCacheControl())
		}
	}
	for _, b := range m.GetReasoningBlocks() {
		out.Reasoning = append(out.Reasoning, chat.ReasoningBlock{Redacted: b.GetType() == "redacted_thinking",
			Text: b.GetThinking(), Signature: b.GetSignature(), Data: b.GetData()})
	}
	if calls := m.GetToolCalls(); len(calls) > 0 {
		out.ToolCalls = make([]chat.ToolCall, len(calls))
		for i, c := range calls {
			out.ToolCalls[i] = chat.ToolCall{ID: c.GetId(), Name: c.GetFunction().GetName(), Arguments: c.GetFunction().GetArguments()}
		}
	}
	return out
}

// tool maps a Tool, the function form winning over the flat one.
func tool(t *llmgatewayv1.Tool) (chat.Tool, error) {
	cc := cacheControl(t.GetCacheControl())
	if f := t.GetFunction(); f != nil {
		params, err := schema(f.GetParametersJson(), f.GetParameters())
		return chat.Tool{Name: f.GetName(), Description: f.GetDescription(), Parameters: params, Wrapped: true, CacheControl: cc,
			Strict: f.GetStrict()}, err
	}
	params, err := schema(t.GetParametersJson(), t.GetParameters())
	return chat.Tool{Name: t.GetName(), Description: t.GetDescription(), Parameters: params, CacheControl: cc, Strict: t.GetStrict()}, err
}

// responseFormat maps a response format, its schema as schema_json or the Struct written
// as a tool's is; the translator checks its values.
func responseFormat(f *llmgatewayv1.ResponseFormat) (*chat.ResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	out := &chat.ResponseFormat{Type: f.GetType()}
	if s := f.GetJsonSchema(); s != nil {
		var err error
		if out.Schema, err = schema(s.GetSchemaJson(), s.GetSchema()); err != nil {
			return nil, fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "response_format.json_schema.schema %v", err)
		}
		out.Name, out.Description, out.Strict = s.GetName(), s.GetDescription(), s.GetStrict()
	}
	return out, nil
}

// cacheControl maps a prompt-cache hint; the translator checks its values.
func cacheControl(c *llmgatewayv1.CacheControl) *chat.CacheControl {
	if c == nil {
		return nil
	}
	return &chat.CacheControl{Type: c.GetType(), TTL: c.GetTtl()}
}

// schema is a tool's JSON Schema as JSON text: parameters_json as the client wrote it, else
// the Struct written with sorted keys, so the same schema always gives the same bytes (a
// stable request, and a stable prompt cache).
func schema(text string, s *structpb.Struct) ([]byte, error) {
	if text != "" {
		return []byte(text), nil
	}
	if s == nil {
		return nil, nil
	}
	b, err := json.Marshal(s.AsMap(), json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("holds a number that is not finite")
	}
	return b, nil
}

func toolChoice(c *llmgatewayv1.ToolChoice) (chat.ToolChoice, error) {
	switch v := c.GetChoice().(type) {
	case *llmgatewayv1.ToolChoice_Function:
		return chat.ToolChoice{Mode: chat.ChoiceFunction, Function: v.Function}, nil
	case *llmgatewayv1.ToolChoice_Mode:
		switch v.Mode {
		case llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_UNSPECIFIED:
		case llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO:
			return chat.ToolChoice{Mode: chat.ChoiceAuto}, nil
		case llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_NONE:
			return chat.ToolChoice{Mode: chat.ChoiceNone}, nil
		case llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED:
			return chat.ToolChoice{Mode: chat.ChoiceRequired}, nil
		default:
			return chat.ToolChoice{}, fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "tool_choice.mode %d is not a ToolChoiceMode", v.Mode)
		}
	}
	return chat.ToolChoice{}, nil
}

var finishReasons = map[chat.FinishReason]llmgatewayv1.FinishReason{
	chat.FinishStop:          llmgatewayv1.FinishReason_FINISH_REASON_STOP,
	chat.FinishToolCalls:     llmgatewayv1.FinishReason_FINISH_REASON_TOOL_CALLS,
	chat.FinishLength:        llmgatewayv1.FinishReason_FINISH_REASON_LENGTH,
	chat.FinishContentFilter: llmgatewayv1.FinishReason_FINISH_REASON_CONTENT_FILTER,
}

func usage(u chat.Usage) *llmgatewayv1.Usage {
	return &llmgatewayv1.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		CachedTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
}

func responseProto(r *chat.Response) *llmgatewayv1.ChatResponse {
	out := &llmgatewayv1.ChatResponse{
		Message:      r.Text,
		FinishReason: finishReasons[r.Finish],
		Usage:        usage(r.Usage),
		Metadata: &llmgatewayv1.ResponseMetadata{
			Model: r.Model, StopReason: r.StopReason, LatencyMs: int32(r.LatencyMs), RequestId: r.RequestID,
			IgnoredParams: r.Ignored, ToolBudget: toolBudget(r.BudgetExhausted), Thinking: r.Thinking,
			ToolValidation: r.ToolValidation,
		},
		Reasoning: chat.ReasoningText(r.Reasoning),
	}
	for i := range r.Reasoning {
		out.ReasoningBlocks = append(out.ReasoningBlocks, blockProto(&r.Reasoning[i]))
	}
	for _, tc := range r.ToolCalls { // translate.Response gives every call its arguments, "{}" at least
		out.ToolCalls = append(out.ToolCalls, &llmgatewayv1.ToolCall{Id: tc.ID, Function: &llmgatewayv1.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			ValidationErrors: tc.ValidationErrors})
	}
	return out
}

// blockProto is a reasoning block as gRPC carries it.
func blockProto(b *chat.ReasoningBlock) *llmgatewayv1.ReasoningBlock {
	if b.Redacted {
		return &llmgatewayv1.ReasoningBlock{Type: "redacted_thinking", Data: b.Data}
	}
	return &llmgatewayv1.ReasoningBlock{Type: "thinking", Thinking: b.Text, Signature: b.Signature}
}

// eventProto maps a stream event; the end marker of a tool call has no gRPC event (a
// client sees a call complete when the next one or done comes), so it is nil, and so are
// reasoning events unless the request asked for them.
func eventProto(ev *chat.Event, reasoning bool) *llmgatewayv1.ChatStreamEvent {
	switch ev.Kind {
	case chat.EventReasoning:
		if reasoning {
			return &llmgatewayv1.ChatStreamEvent{Event: &llmgatewayv1.ChatStreamEvent_Reasoning{Reasoning: &llmgatewayv1.ReasoningDelta{Text: ev.Text}}}
		}
	case chat.EventReasoningBlock:
		if reasoning {
			return &llmgatewayv1.ChatStreamEvent{Event: &llmgatewayv1.ChatStreamEvent_ReasoningBlock{ReasoningBlock: blockProto(&ev.Block)}}
		}
	case chat.EventContent:
		return &llmgatewayv1.ChatStreamEvent{Event: &llmgatewayv1.ChatStreamEvent_Content{Content: &llmgatewayv1.ContentDelta{Text: ev.Text}}}
	case chat.EventToolCall:
		return &llmgatewayv1.ChatStreamEvent{Event: &llmgatewayv1.ChatStreamEvent_ToolCall{ToolCall: &llmgatewayv1.ToolCallDelta{
			Index: int32(ev.Index), Id: ev.ToolCall.ID, Name: ev.ToolCall.Name, Arguments: ev.ToolCall.Arguments,
			ValidationErrors: ev.ToolCall.ValidationErrors,
		}}}
	case chat.EventDone:
		return &llmgatewayv1.ChatStreamEvent{Event: &llmgatewayv1.ChatStreamEvent_Done{Done: &llmgatewayv1.StreamDone{
			FinishReason: finishReasons[ev.Finish], Usage: usage(ev.Usage),
		}}}
	}
	return nil
}

func capabilitiesProto(c *core.Capabilities) *llmgatewayv1.Capabilities {
	out := &llmgatewayv1.Capabilities{
		ToolsSupported:   c.ToolsSupported,
		ToolTypes:        c.ToolTypes,
		StreamingTools:   c.StreamingTools,
		MaxTools:         int32(c.MaxTools),
		StreamingFormats: c.StreamingFormats,
		ToolChoice:       c.ToolChoice,
		DefaultModel:     c.DefaultModel,
		Surfaces:         c.Surfaces,
		Known:            c.Known,
	}
	for _, m := range c.Models {
		out.Models = append(out.Models, &llmgatewayv1.ModelCapabilities{Id: m.ID, Known: m.Known, Tools: m.Tools, StreamingTools: m.StreamingTools, ToolChoice: m.ToolChoice,
			Reasoning: m.Reasoning, PromptCaching: m.PromptCaching, StrictTools: m.StrictTools,
			StructuredOutput: m.StructuredOutput, Images: m.Images, Documents: m.Documents})
	}
	if f := c.Flags; f != nil {
		out.Reasoning, out.PromptCaching, out.StrictTools = &f.Reasoning, &f.PromptCaching, &f.StrictTools
		out.StructuredOutput, out.Images, out.Documents = &f.StructuredOutput, &f.Images, &f.Documents
	}
	return out
}

func toolBudget(exhausted bool) string {
	if exhausted {
		return "exhausted"
	}
	return ""
}
