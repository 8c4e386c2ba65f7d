package translate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// validateBody is the property the fuzz target and the golden tests check on every request
// Request emits: the Bedrock simulator's validator, which answers with Bedrock's own
// messages, and the structural check below, which adds what the simulator leaves to the
// service (unique toolUse ids, results first, no empty inferenceConfig).
func validateBody(modelID string, body []byte) error {
	if err := bedrocksim.ValidateJSON(modelID, body); err != nil {
		return fmt.Errorf("bedrocksim: %w", err)
	}
	return checkConverse(modelID, body)
}

// checkConverse is a structural check of docs/BEDROCK.md section A's rules, written from the
// rules themselves, independent of the translator's code.
func checkConverse(modelID string, body []byte) error {
	model := capabilities.Lookup(modelID)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r bedrock.ConverseRequest
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("body does not decode: %w", err)
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for i, s := range r.System {
		if s.CachePoint == nil && strings.TrimSpace(s.Text) == "" {
			fail("system.%d: blank text", i)
		}
	}
	if len(r.Messages) == 0 {
		fail("messages: empty")
	} else if r.Messages[0].Role != bedrock.RoleUser {
		fail("rule 1: messages.0 is %s", r.Messages[0].Role)
	}
	usesTools := false
	seenIDs := map[string]bool{}
	docNames := map[string]bool{}
	var prevUses map[string]bool // toolUse ids of the previous assistant turn
	for i, m := range r.Messages {
		if m.Role != bedrock.RoleUser && m.Role != bedrock.RoleAssistant {
			fail("messages.%d: role %q", i, m.Role)
		}
		if i > 0 && r.Messages[i-1].Role == m.Role {
			fail("rule 2: messages.%d does not alternate", i)
		}
		if len(m.Content) == 0 {
			fail("rule 3: messages.%d is empty", i)
		}
		uses := map[string]bool{}
		results := map[string]bool{}
		seenOther, hasText, hasDocument := false, false, false
		for j, b := range m.Content {
			n := 0
			for _, set := range []bool{b.Text != nil, b.Image != nil, b.Document != nil, b.ToolUse != nil, b.ToolResult != nil, b.CachePoint != nil, b.ReasoningContent != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				fail("messages.%d.content.%d: %d members set", i, j, n)
			}
			switch {
			case b.Text != nil:
				seenOther, hasText = true, true
				if strings.TrimSpace(*b.Text) == "" {
					fail("rule 4: messages.%d.content.%d: blank text", i, j)
				}
			case b.Image != nil:
				seenOther = true
				if m.Role != bedrock.RoleUser {
					fail("messages.%d.content.%d: image in %s turn", i, j, m.Role)
				}
				checkImage(b.Image, fmt.Sprintf("messages.%d.content.%d", i, j), fail)
			case b.Document != nil:
				seenOther, hasDocument = true, true
				d := b.Document
				if m.Role != bedrock.RoleUser {
					fail("K1: messages.%d.content.%d: document in %s turn", i, j, m.Role)
				}
				if !documentFormat.MatchString(d.Format) {
					fail("K3: messages.%d.content.%d.document.format %q", i, j, d.Format)
				}
				if len(d.Name) > 200 || !documentName.MatchString(d.Name) {
					fail("K3: messages.%d.content.%d.document.name %q", i, j, d.Name)
				}
				if docNames[d.Name] {
					fail("K3: messages.%d.content.%d.document.name %q is not unique", i, j, d.Name)
				}
				docNames[d.Name] = true
				if len(d.Source.Bytes) == 0 {
					fail("messages.%d.content.%d.document.source.bytes is empty", i, j)
				}
			case b.ToolUse != nil:
				usesTools = true
				u := b.ToolUse
				if m.Role != bedrock.RoleAssistant {
					fail("messages.%d.content.%d: toolUse in %s turn", i, j, m.Role)
				}
				if !bedrockName.MatchString(u.Name) {
					fail("rule 9: messages.%d.content.%d.toolUse.name %q", i, j, u.Name)
				}
				if !bedrockName.MatchString(u.ToolUseID) {
					fail("rule 14: messages.%d.content.%d.toolUse.toolUseId %q", i, j, u.ToolUseID)
				}
				if seenIDs[u.ToolUseID] {
					fail("messages.%d.content.%d: toolUseId %q used twice", i, j, u.ToolUseID)
				}
				seenIDs[u.ToolUseID] = true
				uses[u.ToolUseID] = true
				if !isObject(u.Input) {
					fail("messages.%d.content.%d.toolUse.input is not an object: %s", i, j, u.Input)
				}
			case b.ToolResult != nil:
				usesTools = true
				res := b.ToolResult
				if m.Role != bedrock.RoleUser {
					fail("messages.%d.content.%d: toolResult in %s turn", i, j, m.Role)
				}
				if seenOther {
					fail("rule 19: messages.%d.content.%d: toolResult after other blocks", i, j)
				}
				if !prevUses[res.ToolUseID] || results[res.ToolUseID] {
					fail("rule 16: messages.%d.content.%d: toolResult %q answers no call of the previous turn", i, j, res.ToolUseID)
				}
				results[res.ToolUseID] = true
				if res.Status == bedrock.StatusError && len(res.Content) == 0 {
					fail("rule 18: messages.%d.content.%d: error result without content", i, j)
				}
				if res.Status != "" && res.Status != bedrock.StatusError && res.Status != bedrock.StatusSuccess {
					fail("messages.%d.content.%d: status %q", i, j, res.Status)
				}
				for k, c := range res.Content {
					path := fmt.Sprintf("messages.%d.content.%d.toolResult.content.%d", i, j, k)
					switch {
					case c.Text != nil && c.JSON == nil && c.Image == nil:
						if strings.TrimSpace(*c.Text) == "" {
							fail("%s: blank text", path)
						}
					case c.JSON != nil && c.Text == nil && c.Image == nil:
						if !isObject(c.JSON) {
							fail("rule 17: %s.json is not an object", path)
						}
					case c.Image != nil && c.Text == nil && c.JSON == nil:
						checkImage(c.Image, path, fail)
					default:
						fail("%s: not exactly one member", path)
					}
				}
			}
		}
		if hasDocument && !hasText {
			fail("K3: messages.%d has a document and no text block", i)
		}
		if m.Role == bedrock.RoleUser {
			for id := range prevUses {
				if !results[id] {
					fail("rule 15: messages.%d: no toolResult for %q", i, id)
				}
			}
			prevUses = nil
		} else {
			prevUses = uses
		}
	}
	if len(prevUses) > 0 {
		fail("rule 15: the conversation ends with %d toolUse blocks and no user turn of results", len(prevUses))
	}
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == bedrock.RoleAssistant && model.NoPrefill {
		fail("rule 7: trailing assistant turn on a no-prefill model")
	}

	if tc := r.ToolConfig; tc != nil {
		if len(tc.Tools) == 0 {
			fail("rule 8: toolConfig.tools is empty")
		}
		names := map[string]bool{}
		for i, t := range tc.Tools {
			s := t.ToolSpec
			if s == nil {
				if t.CachePoint == nil {
					fail("toolConfig.tools.%d: no toolSpec", i)
				}
				continue
			}
			if !bedrockName.MatchString(s.Name) {
				fail("rule 9: toolConfig.tools.%d.toolSpec.name %q", i, s.Name)
			}
			if names[s.Name] {
				fail("toolConfig.tools.%d.toolSpec.name %q is a duplicate", i, s.Name)
			}
			names[s.Name] = true
			if !rootTypeIsObject(s.InputSchema.JSON) {
				fail("rule 11: toolConfig.tools.%d.toolSpec.inputSchema.json.type must be object: %s", i, s.InputSchema.JSON)
			}
		}
		if c := tc.ToolChoice; c != nil {
			n := 0
			for kind, set := range map[string]bool{capabilities.ChoiceAuto: c.Auto != nil, capabilities.ChoiceAny: c.Any != nil, capabilities.ChoiceTool: c.Tool != nil} {
				if set {
					n++
					if !model.SupportsChoice(kind) {
						fail("rule 12: toolChoice.%s not supported by %s", kind, modelID)
					}
				}
			}
			if n != 1 {
				fail("rule 12: toolChoice has %d members", n)
			}
			if c.Tool != nil && !names[c.Tool.Name] {
				fail("toolChoice.tool.name %q names no tool", c.Tool.Name)
			}
		}
	} else if usesTools {
		fail("rule 13: toolUse/toolResult without toolConfig")
	}
	if err := translate.CheckCachePoints(&r, model); err != nil {
		fail("%v", err)
	}

	if ic := r.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil && *ic.MaxTokens < 1 {
			fail("rule 20: maxTokens %d", *ic.MaxTokens)
		}
		if ic.Temperature != nil && (*ic.Temperature < 0 || *ic.Temperature > 1) {
			fail("rule 20: temperature %v", *ic.Temperature)
		}
		if ic.TopP != nil && (*ic.TopP < 0 || *ic.TopP > 1) {
			fail("rule 20: topP %v", *ic.TopP)
		}
		if ic.Temperature != nil && ic.TopP != nil && model.NoTemperatureWithTopP {
			fail("rule 20: temperature and topP together")
		}
		for i, s := range ic.StopSequences {
			if s == "" {
				fail("rule 20: stopSequences.%d is empty", i)
			}
		}
		if ic.MaxTokens == nil && ic.Temperature == nil && ic.TopP == nil && len(ic.StopSequences) == 0 {
			fail("inferenceConfig is empty")
		}
	}
	return errors.Join(errs...)
}

func checkImage(img *bedrock.ImageBlock, path string, fail func(string, ...any)) {
	switch img.Format {
	case "png", "jpeg", "gif", "webp":
	default:
		fail("%s.image.format %q", path, img.Format)
	}
	if len(img.Source.Bytes) == 0 {
		fail("%s.image.source.bytes is empty", path)
	}
}

// rootTypeIsObject reports whether schema is an object with a root "type" and every root
// "type" is "object". Keys are matched exactly: a struct field tag would also match "TYPE"
// (encoding/json folds case), which JSON Schema does not.
func rootTypeIsObject(schema []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(schema))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if key == "type" {
			var t string
			if json.Unmarshal(v, &t) != nil || t != "object" {
				return false
			}
			found = true
		}
	}
	return found
}

// documentFormat and documentName are what Bedrock accepts as a document's format and name
// (K3); the name's 200-character limit is checked apart.
var (
	documentFormat = regexp.MustCompile(`^(pdf|csv|doc|docx|xls|xlsx|html|txt|md)$`)
	documentName   = regexp.MustCompile(`^[a-zA-Z0-9()\[\]-]+( [a-zA-Z0-9()\[\]-]+)*$`)
)

// bedrockName is what Bedrock accepts as a tool name and a toolUseId (rules 9 and 14).
var bedrockName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func isObject(raw []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
