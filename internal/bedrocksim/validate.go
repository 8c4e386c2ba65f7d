package bedrocksim

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// namePattern is the service model's pattern for tool names and toolUse ids (docs/BEDROCK.md A9,
// A14). The newer model also allows "." and ":" in ids; the stricter set is enforced.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// maxCachePoints is Bedrock's (Anthropic's) limit on cachePoint blocks per request (A22).
const maxCachePoints = 4

// ValidateJSON checks a Converse request body for modelID against the rules of
// docs/BEDROCK.md sections A, G (reasoning), H (cache points), I (structured output and
// strict tools) and K (images and documents),
// including those only the raw JSON shows (extraneous keys, unions with more or fewer than one
// member, empty descriptions). It returns nil, or an error that reads "<code>: <message>" with
// Bedrock's code and message: ValidationException, or ResourceNotFoundException for a model id
// the simulator's table lacks. The rules are Converse's; ConverseStream adds tool use in
// streaming mode and lifts the thinking limit on maxTokens (G12).
func ValidateJSON(modelID string, body []byte) error {
	return validateJSON(modelID, body, false)
}

// ValidateStreamJSON is ValidateJSON for a ConverseStream request.
func ValidateStreamJSON(modelID string, body []byte) error {
	return validateJSON(modelID, body, true)
}

func validateJSON(modelID string, body []byte, stream bool) error {
	model, found := lookupModel(modelID)
	if !found {
		return modelNotFound()
	}
	req, err := decodeRequest(body)
	if err == nil {
		err = validate(model, req, stream)
	}
	if err != nil {
		return err
	}
	return nil
}

// decodeRequest reads a request body: its JSON syntax, then its shape (checkRaw), then the
// structs. Each step answers as Bedrock's schema validator does, "Malformed input request".
func decodeRequest(body []byte) (*converseRequest, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, validation("Malformed input request: no content to map due to end-of-input, reformat your input and try again.")
	}
	// Syntax first: checkRaw walks JSON it can trust to be well formed.
	var whole jsontext.Value
	if err := json.Unmarshal(body, &whole, lenient); err != nil {
		return nil, malformedJSON(err)
	}
	if err := checkRaw(body); err != nil {
		return nil, err
	}
	var req converseRequest
	if err := json.Unmarshal(body, &req, lenient); err != nil {
		return nil, malformedJSON(err)
	}
	return &req, nil
}

// malformedJSON reports a body that is not JSON, or JSON of the wrong type for a member.
func malformedJSON(err error) *apiError {
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "json: "), "jsontext: ")
	return validation("Malformed input request: " + msg + ", reformat your input and try again.")
}

// validate applies to a decoded request the rules of docs/BEDROCK.md sections A, G, H, I and
// K, with model m's variants of them; stream is true for ConverseStream. It records in req what
// the answer needs of additionalModelRequestFields, the structured output's schema and the
// cache points.
func validate(m ModelInfo, req *converseRequest, stream bool) *apiError {
	if err := checkConstraints(req); err != nil {
		return err
	}
	if err := checkEnums(req); err != nil {
		return err
	}
	if req.ToolConfig != nil && !m.Tools {
		return validation("This model doesn't support tool use.")
	}
	for i, sb := range req.System {
		if sb.Text != nil && strings.TrimSpace(*sb.Text) == "" {
			return validation(fmt.Sprintf("The text field in the SystemContentBlock object at system.%d is blank. Add text to the text field, and try again.", i))
		}
	}
	if err := checkMessages(m, req); err != nil {
		return err
	}
	if err := checkMedia(req); err != nil {
		return err
	}
	if err := checkTools(m, req.ToolConfig); err != nil {
		return err
	}
	if err := checkStrictTools(m, req.ToolConfig); err != nil {
		return err
	}
	ch, err := checkAnthropicToolChoice(m, req)
	if err != nil {
		return err
	}
	req.anthropicChoice = ch
	if err := checkOutputConfig(m, req); err != nil {
		return err
	}
	if err := checkCachePoints(m, req); err != nil {
		return err
	}
	if ic := req.InferenceConfig; ic != nil && ic.Temperature != nil && ic.TopP != nil && m.NoTemperatureWithTopP {
		return validation("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
	}
	if err := checkMaxTokens(m, req); err != nil {
		return err
	}
	if err := checkReasoning(m, req, stream); err != nil {
		return err
	}
	// Models whose tool use works only through Converse (docs/BEDROCK.md E, F) refuse a
	// toolConfig on ConverseStream; the gateway calls Converse for them instead.
	if stream && req.ToolConfig != nil && !m.StreamingTools {
		return validation("This model doesn't support tool use in streaming mode.")
	}
	return nil
}

// constraints collects violations of the service model's member constraints. AWS's front
// door reports them all at once ("2 validation errors detected: …; …"), with 1-based list
// indices and ".member" steps in the path, and without the value for members of messages
// (they are sensitive).
type constraints []string

const (
	ruleMinLen1     = "Member must have length greater than or equal to 1"
	ruleMaxLen64    = "Member must have length less than or equal to 64"
	ruleMaxLen200   = "Member must have length less than or equal to 200"
	rulePattern     = "Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"
	ruleImageFormat = "Member must satisfy enum value set: [png, jpeg, gif, webp]"
	ruleDocFormat   = "Member must satisfy enum value set: [pdf, csv, doc, docx, xls, xlsx, html, txt, md]"
)

func (c *constraints) add(value *string, path, rule string) {
	if value == nil {
		*c = append(*c, fmt.Sprintf("Value at '%s' failed to satisfy constraint: %s", path, rule))
		return
	}
	*c = append(*c, fmt.Sprintf("Value '%s' at '%s' failed to satisfy constraint: %s", *value, path, rule))
}

func (c constraints) err() *apiError {
	switch len(c) {
	case 0:
		return nil
	case 1:
		return validation("1 validation error detected: " + c[0])
	}
	return validation(fmt.Sprintf("%d validation errors detected: %s", len(c), strings.Join(c, "; ")))
}

// name checks a tool name or toolUse id: 1–64 characters of [a-zA-Z0-9_-]. In toolConfig the
// value is shown and the pattern is reported first; in messages the value is hidden and the
// length first, as the service does.
func (c *constraints) name(s, path string, inMessages bool) {
	n := utf8.RuneCountInString(s)
	var length []string
	if n < 1 {
		length = append(length, ruleMinLen1)
	}
	if n > 64 {
		length = append(length, ruleMaxLen64)
	}
	value := &s
	if inMessages {
		value = nil
		for _, r := range length {
			c.add(value, path, r)
		}
	}
	if !namePattern.MatchString(s) {
		c.add(value, path, rulePattern)
	}
	if !inMessages {
		for _, r := range length {
			c.add(value, path, r)
		}
	}
}

func checkConstraints(req *converseRequest) *apiError {
	var c constraints
	for i, msg := range req.Messages {
		for j, b := range msg.Content {
			path := fmt.Sprintf("messages.%d.member.content.%d.member.", i+1, j+1)
			if b.ToolUse != nil {
				c.name(b.ToolUse.ToolUseID, path+"toolUse.toolUseId", true)
				c.name(b.ToolUse.Name, path+"toolUse.name", true)
			}
			c.cachePoint(b.CachePoint, path+"cachePoint.", nil)
			if b.ToolResult != nil {
				c.name(b.ToolResult.ToolUseID, path+"toolResult.toolUseId", true)
				for k, rc := range b.ToolResult.Content {
					c.imageFormatEnum(rc.Image, fmt.Sprintf("%stoolResult.content.%d.member.image.format", path, k+1))
				}
			}
			c.imageFormatEnum(b.Image, path+"image.format")
			if d := b.Document; d != nil {
				if !slices.Contains(documentFormats, d.Format) {
					c.add(nil, path+"document.format", ruleDocFormat)
				}
				switch n := utf8.RuneCountInString(d.Name); {
				case n < 1:
					c.add(nil, path+"document.name", ruleMinLen1)
				case n > 200:
					c.add(nil, path+"document.name", ruleMaxLen200)
				}
			}
		}
	}
	for i, b := range req.System {
		c.cachePoint(b.CachePoint, fmt.Sprintf("system.%d.member.cachePoint.", i+1), nil)
	}
	if ic := req.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil && *ic.MaxTokens < 1 {
			v := strconv.Itoa(int(*ic.MaxTokens))
			c.add(&v, "inferenceConfig.maxTokens", "Member must have value greater than or equal to 1")
		}
		for _, p := range []struct {
			name string
			v    *float64
		}{{"temperature", ic.Temperature}, {"topP", ic.TopP}} {
			if p.v == nil {
				continue
			}
			v := strconv.FormatFloat(*p.v, 'g', -1, 64)
			if *p.v < 0 {
				c.add(&v, "inferenceConfig."+p.name, "Member must have value greater than or equal to 0")
			}
			if *p.v > 1 {
				c.add(&v, "inferenceConfig."+p.name, "Member must have value less than or equal to 1")
			}
		}
		for i, s := range ic.StopSequences {
			if s == "" {
				c.add(&s, fmt.Sprintf("inferenceConfig.stopSequences.%d.member", i+1), ruleMinLen1)
			}
		}
	}
	if tc := req.ToolConfig; tc != nil {
		if len(tc.Tools) == 0 {
			v := "[]"
			c.add(&v, "toolConfig.tools", ruleMinLen1)
		}
		for i, t := range tc.Tools {
			if cp := t.CachePoint; cp != nil {
				c.cachePoint(cp, fmt.Sprintf("toolConfig.tools.%d.member.cachePoint.", i+1), cp)
			}
			if t.ToolSpec == nil {
				continue
			}
			path := fmt.Sprintf("toolConfig.tools.%d.member.toolSpec.", i+1)
			c.name(t.ToolSpec.Name, path+"name", false)
			if d := t.ToolSpec.Description; d != nil && *d == "" {
				c.add(d, path+"description", ruleMinLen1)
			}
		}
		if ch := tc.ToolChoice; ch != nil && ch.Tool != nil {
			c.name(ch.Tool.Name, "toolConfig.toolChoice.tool.name", false)
		}
	}
	return c.err()
}

// cachePoint checks a cache point's enums (H1): type "default", ttl "5m" or "1h". shown is
// the point when its values may be quoted (in toolConfig; values in messages and system are
// withheld, as the service does).
func (c *constraints) cachePoint(cp *cachePointBlock, path string, shown *cachePointBlock) {
	if cp == nil {
		return
	}
	var typ, ttl *string
	if shown != nil {
		typ, ttl = &shown.Type, &shown.TTL
	}
	if cp.Type != "default" {
		c.add(typ, path+"type", "Member must satisfy enum value set: [default]")
	}
	if cp.TTL != "" && cp.TTL != ttl5m && cp.TTL != ttl1h {
		c.add(ttl, path+"ttl", "Member must satisfy enum value set: [5m, 1h]")
	}
}

// imageFormatEnum checks an image's format against the enum, case included (K2).
func (c *constraints) imageFormatEnum(img *imageBlock, path string) {
	if img != nil && !slices.Contains(imageFormats, img.Format) {
		c.add(nil, path, ruleImageFormat)
	}
}

// malformed is the schema validator's answer, which names the place with a JSON pointer.
func malformed(pointer, problem string) *apiError {
	return validation(fmt.Sprintf("Malformed input request: %s: %s, reformat your input and try again.", pointer, problem))
}

func memberCount(pointer string, n int) *apiError {
	switch {
	case n < 1:
		return malformed(pointer, fmt.Sprintf("expected minProperties: 1, actual: %d", n))
	case n > 1:
		return malformed(pointer, fmt.Sprintf("expected maxProperties: 1, actual: %d", n))
	}
	return nil
}

func count(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}

// checkEnums checks the enumerated strings the schema validator refuses: roles (A5: a
// system prompt in messages is refused here) and tool result statuses.
func checkEnums(req *converseRequest) *apiError {
	for i, msg := range req.Messages {
		switch msg.Role {
		case roleUser, roleAssistant:
		case "":
			return malformed(fmt.Sprintf("#/messages/%d", i), "required key [role] not found")
		default:
			return malformed(fmt.Sprintf("#/messages/%d/role", i), msg.Role+" is not a valid enum value")
		}
		for j, b := range msg.Content {
			ptr := fmt.Sprintf("#/messages/%d/content/%d", i, j)
			if b.ToolResult != nil {
				switch b.ToolResult.Status {
				case "", statusSuccess, statusError:
				default:
					return malformed(ptr+"/toolResult/status", b.ToolResult.Status+" is not a valid enum value")
				}
			}
		}
	}
	return nil
}

// checkMessages enforces the conversation rules A1–A4, A7 and A13–A19 (A15 also for a
// trailing assistant turn with toolUse blocks).
func checkMessages(m ModelInfo, req *converseRequest) *apiError {
	msgs := req.Messages
	if len(msgs) == 0 || msgs[0].Role != roleUser {
		return validation("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	seenIDs := map[string]bool{}
	for i, msg := range msgs {
		if i > 0 && msg.Role == msgs[i-1].Role {
			return validation("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		if len(msg.Content) == 0 {
			return validation(fmt.Sprintf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i))
		}
		conversation := false // a text, image or document block seen in this turn
		for j, b := range msg.Content {
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch {
			case b.Text != nil:
				if strings.TrimSpace(*b.Text) == "" {
					return validation(fmt.Sprintf("The text field in the ContentBlock object at %s is blank. Add text to the text field, and try again.", at))
				}
				conversation = true
			case b.Image != nil, b.Document != nil:
				conversation = true
			case b.ReasoningContent != nil:
				if msg.Role != roleAssistant {
					return validation(at + ": reasoningContent blocks can only be in assistant messages.")
				}
			case b.ToolUse != nil:
				if req.ToolConfig == nil {
					return validation("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
				}
				if msg.Role != roleAssistant {
					return validation(at + ": toolUse blocks can only be in assistant messages.")
				}
				if !isObject(b.ToolUse.Input) {
					return validation(fmt.Sprintf("The format of the value at %s.toolUse.input is invalid. Provide a json object for the field and try again.", at))
				}
				if seenIDs[b.ToolUse.ToolUseID] {
					return validation(fmt.Sprintf("%s: toolUse ids must be unique. The toolUseId %s appears more than once in the conversation.", at, b.ToolUse.ToolUseID))
				}
				seenIDs[b.ToolUse.ToolUseID] = true
			case b.ToolResult != nil:
				if req.ToolConfig == nil {
					return validation("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
				}
				if msg.Role != roleUser {
					return validation(at + ": toolResult blocks can only be in user messages.")
				}
				if m.ResultsFirst && conversation {
					return validation(fmt.Sprintf("messages.%d.content: Conversation blocks and tool result blocks cannot be provided in the same turn.", i))
				}
				r := b.ToolResult
				if r.Status == statusError && len(r.Content) == 0 {
					return validation(fmt.Sprintf("The content field at %s.toolResult cannot be empty when status value is error.", at))
				}
				for k, rc := range r.Content {
					if rc.JSON != nil && !isObject(rc.JSON) {
						return validation(fmt.Sprintf("The format of the value at %s.toolResult.content.%d.json is invalid. Provide a json object for the field and try again.", at, k))
					}
				}
			}
		}
		if err := checkPairing(msgs, i); err != nil {
			return err
		}
	}
	if err := checkTrailingToolUse(msgs); err != nil {
		return err
	}
	if m.NoPrefill && msgs[len(msgs)-1].Role == roleAssistant {
		return validation("This model does not support assistant message prefill. The conversation must end with a user message.")
	}
	return nil
}

// checkPairing enforces A15 and A16 on user message i: its toolResult blocks answer exactly
// the toolUse blocks of the assistant turn before it.
func checkPairing(msgs []message, i int) *apiError {
	msg := msgs[i]
	if msg.Role != roleUser {
		return nil
	}
	var uses []string
	if i > 0 {
		for _, b := range msgs[i-1].Content {
			if b.ToolUse != nil {
				uses = append(uses, b.ToolUse.ToolUseID)
			}
		}
	}
	answered := map[string]bool{}
	results := 0
	exceeds := validation(fmt.Sprintf("The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i))
	for _, b := range msg.Content {
		if b.ToolResult == nil {
			continue
		}
		results++
		if results > len(uses) {
			return exceeds
		}
		answered[b.ToolResult.ToolUseID] = true
	}
	var missing []string
	for _, id := range uses {
		if !answered[id] {
			missing = append(missing, id)
		}
	}
	if len(answered) > len(uses)-len(missing) {
		return exceeds // a result answers an id the previous turn did not use
	}
	if len(missing) > 0 {
		return validation(fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, strings.Join(missing, ", ")))
	}
	return nil
}

// checkTrailingToolUse extends A15 to a conversation that ends with the assistant's
// toolUse blocks: the user turn of results that must follow is missing, so the ids are
// reported at the index that turn would have. It is checked before A7, on every model:
// tool pairing is Converse's own rule, prefill the model's.
func checkTrailingToolUse(msgs []message) *apiError {
	last := len(msgs) - 1
	if msgs[last].Role != roleAssistant {
		return nil
	}
	var ids []string
	for _, b := range msgs[last].Content {
		if b.ToolUse != nil {
			ids = append(ids, b.ToolUse.ToolUseID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return validation(fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", last+1, strings.Join(ids, ", ")))
}

// isObject reports whether raw, which decoding has already found to be valid JSON, is an object.
func isObject(raw jsontext.Value) bool { return raw.Kind() == '{' }

// checkTools enforces A9 (unique names), A11 and A12.
func checkTools(m ModelInfo, tc *toolConfiguration) *apiError {
	if tc == nil {
		return nil
	}
	names := map[string]bool{}
	for i, t := range tc.Tools {
		spec := t.ToolSpec
		if spec == nil {
			continue
		}
		if names[spec.Name] {
			return validation(fmt.Sprintf("The tool name %s is duplicated in toolConfig.tools. Tool names must be unique.", spec.Name))
		}
		names[spec.Name] = true
		if !isObjectSchema(spec.InputSchema.JSON) {
			return validation(fmt.Sprintf("The value at toolConfig.tools.%d.toolSpec.inputSchema.json.type must be one of the following: object.", i))
		}
	}
	ch := tc.ToolChoice
	if ch == nil {
		return nil
	}
	switch {
	case ch.Any != nil && !slices.Contains(m.ToolChoice, ChoiceAny):
		return validation("This model doesn't support the toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again")
	case ch.Tool != nil && !slices.Contains(m.ToolChoice, ChoiceTool):
		return validation("This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again")
	case ch.Tool != nil && !names[ch.Tool.Name]:
		return validation(fmt.Sprintf("The tool %s named in toolConfig.toolChoice.tool.name is not defined in toolConfig.tools.", ch.Tool.Name))
	}
	return nil
}
