package translate

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// Structured output (docs/PROTOCOL.md 13.3, docs/BEDROCK.md I). A json_schema goes to the
// models that take it natively as outputConfig.textFormat, its schema cut to what Bedrock
// accepts; every other model with tool use gets a synthetic tool whose input is the answer.
// json_object is a system instruction, and the core checks the answer.

// Texts the gateway adds to the system prompt for a response_format.
const (
	// jsonObjectNote asks for a json_object answer.
	jsonObjectNote = "Answer with one JSON object and nothing else: no text before or after it, no code fence."
	// answerToolNote asks the model to answer through the synthetic tool when other tools
	// are offered too (%s is its name).
	answerToolNote = "When you give your final answer, give it by calling the tool %s with the answer as its input, not as text."
	// answerToolOnlyNote is answerToolNote when the synthetic tool is the only one the model
	// may call (no tools of the client's, tool_choice "none", the tool budget spent).
	answerToolOnlyNote = "Give your answer by calling the tool %s with the answer as its input, not as text; it is the one tool you may call."
	// answerToolDescription describes the synthetic tool; the client's description of its
	// schema follows.
	answerToolDescription = "Give your final answer to the user through this tool: its input is the answer."
)

// answerToolName is the synthetic tool's name; json_response_2, _3, … when the request
// uses the name itself.
const answerToolName = "json_response"

// defaultSchemaName names a json_schema the client gave no name.
const defaultSchemaName = "response"

// schemaParam is the field a refused json_schema schema is blamed on.
const schemaParam = "response_format.json_schema.schema"

// format is what a request's response_format becomes on its model. The zero value asks
// for nothing.
type format struct {
	// native: outputConfig.textFormat carries the schema.
	native bool
	// tool is the Bedrock name of the synthetic answer tool; "" without one.
	tool string
	// schema is the checked schema, compacted: the synthetic tool's inputSchema.
	schema            []byte
	name, description string
	// object: json_object.
	object bool
}

// planFormat checks the request's response_format and decides how the model gets it. It
// runs after newNamer, so the synthetic tool's name collides with no name the request
// uses: the client's tools, the history's calls, or a substitute handed out for either.
func planFormat(req *chat.Request, model capabilities.Model, n *namer) (format, error) {
	rf := req.ResponseFormat
	if rf == nil {
		return format{}, nil
	}
	switch rf.Type {
	case chat.FormatText:
		return format{}, nil
	case chat.FormatJSONObject:
		return format{object: true}, nil
	case chat.FormatJSONSchema:
	case "":
		return format{}, invalidf(`response_format.type is missing; it is "text", "json_object" or "json_schema"`)
	default:
		return format{}, unsupportedf(`response_format.type %s is not one of "text", "json_object", "json_schema"`, clip.Quote(rf.Type))
	}
	schema, err := objectSchema(rf.Schema)
	if err != nil {
		return format{}, err
	}
	f := format{schema: schema, name: rf.Name, description: rf.Description}
	if f.name == "" {
		f.name = defaultSchemaName
	} else if !validName(f.name) {
		return format{}, invalidf("response_format.json_schema.name %s must be 1 to 64 letters, digits, underscores and hyphens", clip.Quote(f.name))
	}
	switch {
	case model.StructuredOutput:
		f.native = true
	case model.Tools:
		f.tool = n.reserveAnswerTool()
	default:
		return format{}, fault.Refuse(fault.ErrUnsupported, fault.ReasonUnsupportedValue,
			`response_format.type "json_schema" is not supported on model %s, which has neither structured output nor tool use; use "json_object" or another model`,
			clip.String(model.ID, clip.LogMax))
	}
	return f, nil
}

// objectSchema checks a json_schema's schema: a JSON object whose root "type" is "object"
// (OpenAI's rule for response_format too; a missing type is refused, not inserted as for
// tools, since an untyped root accepts any JSON). It returns the schema compacted.
func objectSchema(s []byte) ([]byte, error) {
	if len(s) == 0 {
		return nil, invalidf(`%s is missing; it is a JSON Schema whose root "type" is "object"`, schemaParam)
	}
	if !utf8.Valid(s) { // compacting does not check it
		return nil, invalidf("%s is not valid UTF-8", schemaParam)
	}
	b, err := compactJSON(bytes.Clone(s))
	if err != nil {
		return nil, invalidf("%s %s", schemaParam, fault.JSONErrorText(err))
	}
	if b[0] != '{' {
		return nil, invalidf("%s must be a JSON object, not %s", schemaParam, jsonKind(b[0]))
	}
	found, err := checkRootType(b)
	switch {
	case err != nil:
		return nil, invalidf("%s %s", schemaParam, err.Error())
	case !found:
		return nil, invalidf(`%s must be a JSON Schema whose root "type" is "object"; it has no "type"`, schemaParam)
	}
	return b, nil
}

// reserveAnswerTool hands out the synthetic tool's Bedrock name: json_response, else the
// first of json_response_2, json_response_3, … that no client name or substitute holds.
func (n *namer) reserveAnswerTool() string {
	for k := 1; ; k++ {
		name := answerToolName
		if k > 1 {
			name += "_" + strconv.Itoa(k)
		}
		if !n.tools.reserved[name] && !n.tools.used[name] {
			n.tools.use(name)
			n.names.AnswerTool = name
			return name
		}
	}
}

// offer adds the synthetic tool to cfg (nil: the request offers no tool of its own) and
// chooses how it is offered. Forced (toolChoice.tool, or any where the model has no tool
// choice and it is the only tool) when the model may call no client tool (none given,
// tool_choice "none", the tool budget spent) and thinking is off (BEDROCK.md G10);
// otherwise under the client's own tool_choice (auto when it set none) with a system
// note, returned, asking for the answer through it.
func (f *format) offer(cfg *bedrock.ToolConfig, req *chat.Request, model capabilities.Model, thinkingOn bool) (*bedrock.ToolConfig, string) {
	if f.tool == "" {
		return cfg, ""
	}
	if cfg == nil {
		cfg = &bedrock.ToolConfig{}
	}
	clientTools := len(req.Tools) > 0 && req.ToolChoice.Mode != chat.ChoiceNone
	only := len(cfg.Tools) == 0
	spec := &bedrock.ToolSpec{Name: f.tool, Description: answerToolDescription, InputSchema: bedrock.InputSchema{JSON: f.schema}}
	if !isBlank(f.description) {
		spec.Description += " " + f.description
	}
	cfg.Tools = append(cfg.Tools, bedrock.Tool{ToolSpec: spec})
	if clientTools {
		return cfg, fmt.Sprintf(answerToolNote, f.tool)
	}
	switch {
	case thinkingOn:
	case model.SupportsChoice(capabilities.ChoiceTool):
		cfg.ToolChoice = &bedrock.ToolChoice{Tool: &bedrock.SpecificToolChoice{Name: f.tool}}
		return cfg, ""
	case only && model.SupportsChoice(capabilities.ChoiceAny):
		cfg.ToolChoice = &bedrock.ToolChoice{Any: &struct{}{}}
		return cfg, ""
	}
	return cfg, fmt.Sprintf(answerToolOnlyNote, f.tool)
}

// apply writes what the format adds to the request besides the tool: outputConfig, or the
// system note (the json_object instruction, or note from offer).
func (f *format) apply(out *bedrock.ConverseRequest, note string, names *Plan) error {
	switch {
	case f.object:
		names.JSONObject = true
		note = jsonObjectNote
	case f.native:
		schema, err := sanitizeSchema(f.schema)
		if err != nil {
			return invalidf("%s %s", schemaParam, fault.JSONErrorText(err))
		}
		def := &bedrock.JSONSchemaDefinition{Schema: string(schema), Name: f.name}
		if !isBlank(f.description) {
			def.Description = f.description
		}
		out.OutputConfig = &bedrock.OutputConfig{TextFormat: &bedrock.OutputFormat{
			Type: bedrock.OutputFormatTypeJSONSchema, Structure: bedrock.OutputFormatStructure{JSONSchema: def}}}
		names.OutputSchema = true
	}
	if note != "" {
		out.System = append(out.System, bedrock.SystemBlock{Text: note})
	}
	return nil
}

// Sanitising a schema for outputConfig (BEDROCK.md I rule 2): Bedrock refuses these
// keywords (minItems only above 1), so they are removed and appended to the description
// of the schema that had them, where the model still reads them.
var refusedKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "maxItems", "minItems"}

// Schema keywords whose values are schemas, maps of schemas or lists of schemas (draft
// 2020-12, and draft-07's definitions, additionalItems and list-form items): only inside
// these is a member a keyword, so a property named "minimum" is left alone.
var (
	subschemaKeywords = []string{"additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems",
		"contains", "propertyNames", "not", "if", "then", "else", "items", "contentSchema"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// What a JSON value is to the sanitiser.
type schemaRole uint8

const (
	plainValue schemaRole = iota // not a schema: keys sorted, nothing removed
	schemaValue
	schemaMap  // an object whose member values are schemas
	schemaList // an array whose elements are schemas
)

// sanitizeSchema returns a checked schema as outputConfig carries it: the refused keywords
// moved into descriptions, every object's members sorted by name, compact, numbers and
// strings as the client wrote them. The same schema always gives the same bytes, which the
// prompt cache and Bedrock's grammar cache (BEDROCK.md I rule 3, H rule 7) key on.
func sanitizeSchema(schema []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(schema), bedrock.Lenient)
	out, err := canonical(dec, nil, schemaValue)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// member is one member of an object being rewritten.
type member struct {
	name  string         // unquoted, for sorting and matching
	raw   jsontext.Value // the name as written
	value []byte         // the value, rewritten
}

// canonical reads the next value of dec and appends it to out, rewritten for its role.
func canonical(dec *jsontext.Decoder, out []byte, role schemaRole) ([]byte, error) {
	switch dec.PeekKind() {
	case '{':
		return canonicalObject(dec, out, role)
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		out = append(out, '[')
		elem := plainValue
		if role == schemaList {
			elem = schemaValue
		}
		for i := 0; dec.PeekKind() != ']'; i++ {
			if i > 0 {
				out = append(out, ',')
			}
			var err error
			if out, err = canonical(dec, out, elem); err != nil {
				return nil, err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return append(out, ']'), nil
	}
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	return append(out, v...), nil
}

func canonicalObject(dec *jsontext.Decoder, out []byte, role schemaRole) ([]byte, error) {
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var members []member
	for dec.PeekKind() != '}' {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		m := member{raw: bytes.Clone(raw)}
		if err := json.Unmarshal(m.raw, &m.name); err != nil {
			return nil, err
		}
		if m.value, err = canonical(dec, nil, memberRole(role, m.name, dec.PeekKind())); err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if role == schemaValue {
		members = moveRefused(members)
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, m.raw...), ':'), m.value...)
	}
	return append(out, '}'), nil
}

// memberRole is the role of member name's value, of JSON kind k, in an object of role.
func memberRole(role schemaRole, name string, k jsontext.Kind) schemaRole {
	switch role {
	case schemaMap:
		return schemaValue
	case schemaValue:
		switch {
		case k == '[' && slices.Contains(schemaListKeywords, name):
			return schemaList
		case k == '{' && slices.Contains(subschemaKeywords, name):
			return schemaValue
		case k == '{' && slices.Contains(schemaMapKeywords, name):
			return schemaMap
		}
	}
	return plainValue
}

// moveRefused removes a schema's refused keywords and appends them to its description:
// "minimum: 1, maximum: 10", after the client's own text in parentheses when it has some.
func moveRefused(members []member) []member {
	var notes []string
	for _, kw := range refusedKeywords {
		i := slices.IndexFunc(members, func(m member) bool { return m.name == kw })
		if i < 0 || kw == "minItems" && atMostOne(members[i].value) {
			continue
		}
		notes = append(notes, kw+": "+string(members[i].value))
		members = slices.Delete(members, i, i+1)
	}
	if len(notes) == 0 {
		return members
	}
	text := strings.Join(notes, ", ")
	i := slices.IndexFunc(members, func(m member) bool { return m.name == "description" })
	if i < 0 {
		members = append(members, member{name: "description", raw: jsontext.Value(`"description"`)})
		i = len(members) - 1
	} else {
		var desc string
		if json.Unmarshal(members[i].value, &desc) == nil && !isBlank(desc) {
			text = desc + " (" + text + ")"
		}
	}
	members[i].value, _ = jsontext.AppendQuote(nil, text) // invalid UTF-8, which objectSchema refuses, would be U+FFFD
	return members
}

// atMostOne reports whether a minItems value is one Bedrock takes: 0 or 1.
func atMostOne(v []byte) bool {
	n, err := strconv.ParseFloat(string(v), 64)
	return err == nil && (n == 0 || n == 1)
}

// TextHold decides which of an answer's text is the answer's when the request offers the
// synthetic answer tool (docs/PROTOCOL.md 13.3): once the model calls it, its input is the
// answer text, and nothing the model wrote besides ("I'll call json_response.", before or
// after it, beside client calls or not) is. So text is held until the answer shows
// whether the tool is called: its call drops it, the end of an answer without one
// releases it. Unary answers and streams apply this one rule, so both give the same text;
// a stream pays with text that arrives at its end rather than as written. The zero value
// holds nothing. Not safe for concurrent use.
type TextHold struct {
	on       bool
	held     strings.Builder
	answered bool
}

// NewTextHold returns the hold of an answer to a request translated with names.
func NewTextHold(names *Plan) TextHold { return TextHold{on: names != nil && names.AnswerTool != ""} }

// Text takes a fragment of the model's text and returns what may be passed on now.
func (h *TextHold) Text(s string) string {
	switch {
	case !h.on:
		return s
	case !h.answered:
		h.held.WriteString(s)
	}
	return ""
}

// AnswerCall notes a call of the answer tool and reports whether it is the answer: the
// first one is, later ones are dropped. The text held so far is dropped.
func (h *TextHold) AnswerCall() bool {
	h.held.Reset()
	first := !h.answered
	h.answered = true
	return first
}

// End returns the text still held that is part of the answer, at its end.
func (h *TextHold) End() string {
	s := h.held.String()
	h.held.Reset()
	return s
}

// Answered reports whether the answer tool was called.
func (h *TextHold) Answered() bool { return h.answered }

// IsAnswerTool reports whether a tool name Bedrock used is the synthetic answer tool's.
func (n *Plan) IsAnswerTool(bedrockName string) bool {
	return n != nil && n.AnswerTool != "" && bedrockName == n.AnswerTool
}

// OneJSONObject reports whether text is one JSON object and nothing else but whitespace:
// what a json_object answer should be.
func OneJSONObject(text string) bool {
	v := jsontext.Value(strings.TrimSpace(text))
	return len(v) > 0 && v[0] == '{' && v.IsValid()
}

// RefusedParam names the request field a Bedrock ValidationException's message is about,
// where the translation can tell: the outputConfig schema's refusal is blamed on
// response_format.json_schema.schema. "" when it cannot tell.
func RefusedParam(names *Plan, message string) string {
	if names != nil && names.OutputSchema && (strings.Contains(message, "output_config") || strings.Contains(message, "outputConfig")) {
		return schemaParam
	}
	return ""
}
