package e2e

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// restRequest is what grpcRequest carries over from a Nirmata REST body, declared as a
// client writes it (docs/PROTOCOL.md 3): content a string or a list of parts, tools wrapped
// ({"type": "function", "function": {…}}) or flat, tool_choice a string or an object.
type restRequest struct {
	Model       string          `json:"model"`
	MaxTokens   *int32          `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	TopP        *float64        `json:"top_p"`
	Stop        json.RawMessage `json:"stop"` // a string or a list
	Messages    []struct {
		Role         string          `json:"role"`
		Content      json.RawMessage `json:"content"`
		ToolCallID   string          `json:"tool_call_id"`
		Name         string          `json:"name"`
		CacheControl *restCache      `json:"cache_control"`
		ToolCalls    []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"` // a string, or the object itself
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function *restFunction `json:"function"`
		restFunction
		CacheControl *restCache `json:"cache_control"`
	} `json:"tools"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      bool            `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ToolValidation string          `json:"tool_validation"`
}

type restFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type restCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

func (c *restCache) proto() *llmgatewayv1.CacheControl {
	if c == nil {
		return nil
	}
	return &llmgatewayv1.CacheControl{Type: c.Type, Ttl: c.TTL}
}

// stringOr is raw as a string when it is one, else its JSON text compacted, else "".
func stringOr(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if len(raw) == 0 || string(raw) == "null" || json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// grpcRequest is the gRPC request a client builds for the same call as a REST body, so a
// test can send one history over both transports.
func grpcRequest(t testing.TB, body string) *llmgatewayv1.ChatRequest {
	t.Helper()
	var req restRequest
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	out := &llmgatewayv1.ChatRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP,
		ToolValidation: req.ToolValidation}
	if len(req.Stop) > 0 && json.Unmarshal(req.Stop, &out.Stop) != nil {
		out.Stop = []string{stringOr(req.Stop)}
	}
	roles := map[string]llmgatewayv1.Role{
		"system": llmgatewayv1.Role_ROLE_SYSTEM, "developer": llmgatewayv1.Role_ROLE_DEVELOPER, "user": llmgatewayv1.Role_ROLE_USER,
		"assistant": llmgatewayv1.Role_ROLE_ASSISTANT, "tool": llmgatewayv1.Role_ROLE_TOOL,
	}
	for _, m := range req.Messages {
		pm := &llmgatewayv1.Message{Role: roles[m.Role], ToolCallId: m.ToolCallID, Name: m.Name, CacheControl: m.CacheControl.proto()}
		var parts []struct {
			Type     string                `json:"type"`
			Text     string                `json:"text"`
			ImageURL *struct{ URL string } `json:"image_url"`
			File     *struct {
				Data     string `json:"file_data"`
				Filename string `json:"filename"`
				ID       string `json:"file_id"`
			} `json:"file"`
			Cache *restCache `json:"cache_control"`
		}
		if json.Unmarshal(m.Content, &parts) == nil && parts != nil {
			for _, p := range parts {
				part := &llmgatewayv1.ContentPart{Part: &llmgatewayv1.ContentPart_Text{Text: p.Text}, CacheControl: p.Cache.proto()}
				switch {
				case p.ImageURL != nil:
					part.Part = &llmgatewayv1.ContentPart_ImageUrl{ImageUrl: &llmgatewayv1.ImageURL{Url: p.ImageURL.URL}}
				case p.File != nil:
					part.Part = &llmgatewayv1.ContentPart_File{File: &llmgatewayv1.File{FileData: p.File.Data, Filename: p.File.Filename, FileId: p.File.ID}}
				}
				pm.Parts = append(pm.Parts, part)
			}
		} else {
			pm.Content = stringOr(m.Content)
		}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, &llmgatewayv1.ToolCall{Id: c.ID, Function: &llmgatewayv1.FunctionCall{Name: c.Function.Name, Arguments: stringOr(c.Function.Arguments)}})
		}
		out.Messages = append(out.Messages, pm)
	}
	for _, tl := range req.Tools {
		f := tl.restFunction
		if tl.Function != nil {
			f = *tl.Function
		}
		out.Tools = append(out.Tools, &llmgatewayv1.Tool{Function: &llmgatewayv1.FunctionDefinition{
			Name: f.Name, Description: f.Description, ParametersJson: stringOr(f.Parameters), Strict: f.Strict || tl.Strict,
		}, CacheControl: tl.CacheControl.proto()})
	}
	if rf := req.ResponseFormat; rf != nil {
		out.ResponseFormat = &llmgatewayv1.ResponseFormat{Type: rf.Type}
		if s := rf.JSONSchema; s != nil {
			out.ResponseFormat.JsonSchema = &llmgatewayv1.JSONSchemaFormat{Name: s.Name, Description: s.Description, SchemaJson: stringOr(s.Schema), Strict: s.Strict}
		}
	}
	modes := map[string]llmgatewayv1.ToolChoiceMode{
		"auto": llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO, "none": llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_NONE,
		"required": llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED, "any": llmgatewayv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED,
	}
	var named struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if mode, ok := modes[stringOr(req.ToolChoice)]; ok {
		out.ToolChoice = &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Mode{Mode: mode}}
	} else if json.Unmarshal(req.ToolChoice, &named) == nil && named.Function.Name+named.Name != "" {
		out.ToolChoice = &llmgatewayv1.ToolChoice{Choice: &llmgatewayv1.ToolChoice_Function{Function: named.Function.Name + named.Name}}
	}
	return out
}

var user = llmgatewayv1.Role_ROLE_USER
