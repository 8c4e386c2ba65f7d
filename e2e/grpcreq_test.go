package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/nirmata"
)

// grpcRequest is the gRPC request a client builds for the same call as a REST body, so a
// test can send one history over both transports.
func grpcRequest(t testing.TB, body string) *llmgatewayv1.ChatRequest {
	t.Helper()
	req, _, err := nirmata.DecodeRequest([]byte(body))
	require.NoError(t, err)
	out := &llmgatewayv1.ChatRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, Stop: req.Stop}
	roles := map[string]llmgatewayv1.Role{
		"system": llmgatewayv1.Role_ROLE_SYSTEM, "developer": llmgatewayv1.Role_ROLE_DEVELOPER, "user": llmgatewayv1.Role_ROLE_USER,
		"assistant": llmgatewayv1.Role_ROLE_ASSISTANT, "tool": llmgatewayv1.Role_ROLE_TOOL,
	}
	for _, m := range req.Messages {
		pm := &llmgatewayv1.Message{Role: roles[m.Role], Content: m.Content, ToolCallId: m.ToolCallID, Name: m.Name, CacheControl: cacheControlProto(m.CacheControl)}
		for _, p := range m.Parts {
			switch {
			case p.Image != nil:
				pm.Parts = append(pm.Parts, &llmgatewayv1.ContentPart{Part: &llmgatewayv1.ContentPart_ImageUrl{ImageUrl: &llmgatewayv1.ImageURL{Url: p.Image.URL}}})
			case p.File != nil:
				pm.Parts = append(pm.Parts, &llmgatewayv1.ContentPart{Part: &llmgatewayv1.ContentPart_File{File: &llmgatewayv1.File{FileData: p.File.Data, Filename: p.File.Filename, FileId: p.File.FileID}}})
			default:
				pm.Parts = append(pm.Parts, &llmgatewayv1.ContentPart{Part: &llmgatewayv1.ContentPart_Text{Text: p.Text}})
			}
			pm.Parts[len(pm.Parts)-1].CacheControl = cacheControlProto(p.CacheControl)
		}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, &llmgatewayv1.ToolCall{Id: c.ID, Function: &llmgatewayv1.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		out.Messages = append(out.Messages, pm)
	}
	for _, tl := range req.Tools {
		out.Tools = append(out.Tools, &llmgatewayv1.Tool{Function: &llmgatewayv1.FunctionDefinition{
			Name: tl.Name, Description: tl.Description, ParametersJson: string(tl.Parameters),
		}, CacheControl: cacheControlProto(tl.CacheControl)})
	}
	if rf := req.ResponseFormat; rf != nil {
		out.ResponseFormat = &llmgatewayv1.ResponseFormat{Type: rf.Type, JsonSchema: &llmgatewayv1.JSONSchemaFormat{
			Name: rf.Name, Description: rf.Description, SchemaJson: string(rf.Schema), Strict: rf.Strict}}
	}
	switch req.ToolChoice.Mode {
	case chat.ChoiceAuto:
		out.ToolChoice = &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO}}
	case chat.ChoiceNone:
		out.ToolChoice = &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_NONE}}
	case chat.ChoiceRequired:
		out.ToolChoice = &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED}}
	case chat.ChoiceFunction:
		out.ToolChoice = &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Function{Function: req.ToolChoice.Function}}
	}
	return out
}

func cacheControlProto(c *chat.CacheControl) *llmgatewayv1.CacheControl {
	if c == nil {
		return nil
	}
	return &llmgatewayv1.CacheControl{Type: c.Type, Ttl: c.TTL}
}

var user = llmgatewayv1.Role_ROLE_USER
