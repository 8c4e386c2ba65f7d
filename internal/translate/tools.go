package translate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/memo"
)

// emptyObjectSchema is the schema of a tool that declares no parameters (docs/PROTOCOL.md 3:
// missing parameters means an object with no properties).
var emptyObjectSchema = []byte(`{"type":"object","properties":{}}`)

// historyToolSchema is the schema of a tool spec made up for a name found only in history:
// rule 13 wants a toolConfig whenever toolUse/toolResult blocks are present.
var historyToolSchema = []byte(`{"type":"object"}`)

// toolSpec builds the Bedrock tool spec of tool i in spec.
func toolSpec(spec *bedrock.ToolSpec, i int, t *chat.Tool, bedrockName string, model capabilities.Model) error {
	schema, err := inputSchema(t.Parameters)
	if err != nil {
		return invalidf("%s.parameters %s", ToolPath(i, t), err.Error())
	}
	*spec = bedrock.ToolSpec{Name: bedrockName, InputSchema: bedrock.InputSchema{JSON: schema}, Strict: t.Strict && NativeStrict(model)}
	// Rule 10: a present description must not be empty.
	if !isBlank(t.Description) {
		spec.Description = t.Description
	}
	return nil
}

// schemaError is a reason a parameters schema is refused; the caller adds the path.
type schemaError string

func (e schemaError) Error() string { return string(e) }

// inputSchema is the inputSchema.json of a tool: its parameters, else an object with no
// properties (docs/PROTOCOL.md 3). Rule 11: the root type must be "object"; a missing type
// is set.
func inputSchema(parameters []byte) ([]byte, error) {
	if len(parameters) == 0 {
		return emptyObjectSchema, nil
	}
	return jsonSchema(parameters)
}

// typeObject is the member a schema without a root "type" gets (rule 11).
const typeObject = `"type":"object"`

// bedrockSchemas are the schemas jsonSchema accepted, by their text: clients send the
// same tools with every request, so each distinct schema is checked and rewritten once. It
// keeps at most 8 MiB of schemas, both texts counted.
var bedrockSchemas = memo.New[[]byte](8 << 20)

// jsonSchema checks a schema and returns it as Bedrock gets it: compacted, and otherwise
// the client's bytes (key order, escapes, numbers such as 12345678901234567890 or 0.1, no
// HTML escaping), so the model sees the schema the client wrote and the prompt cache sees
// the same bytes every time. It is validated, never decoded. A missing root "type" is
// inserted as the first member, so no other member is rewritten; {} becomes
// emptyObjectSchema, as absent parameters do. The result is shared between requests: it
// must not be changed.
func jsonSchema(s []byte) ([]byte, error) {
	if b, ok := bedrockSchemas.Get(s); ok {
		return b, nil
	}
	b, err := checkSchema(s)
	if err != nil {
		return nil, err
	}
	b = slices.Clip(b) // an append to it copies
	bedrockSchemas.Put(s, b, len(b))
	return b, nil
}

// checkSchema is jsonSchema's work.
func checkSchema(s []byte) ([]byte, error) {
	if !utf8.Valid(s) {
		return nil, schemaError("is not valid UTF-8")
	}
	// One allocation: the text, compacted in place, with room to insert the type member.
	b := make([]byte, len(s), len(s)+len(typeObject)+1)
	copy(b, s)
	if bytes.ContainsAny(b, " \t\r\n") { // else compact already (the REST surface compacts); checkRootType validates
		var err error
		if b, err = compactJSON(b); err != nil {
			return nil, schemaError(fault.JSONErrorText(err))
		}
	}
	if len(b) == 0 {
		return nil, schemaError(fault.JSONErrorText(io.ErrUnexpectedEOF))
	}
	if b[0] != '{' {
		if !jsontext.Value(b).IsValid() {
			_, err := compactJSON(b) // for its error
			return nil, schemaError(fault.JSONErrorText(err))
		}
		return nil, schemaError("must be a JSON object, not " + jsonKind(b[0]))
	}
	if string(b) == "{}" {
		return emptyObjectSchema, nil
	}
	found, err := checkRootType(b)
	if errors.Is(err, errNotJSON) {
		_, err = compactJSON(b) // its words for what is wrong
		return nil, schemaError(fault.JSONErrorText(err))
	}
	if err != nil {
		return nil, err
	}
	if !found {
		n := len(b)
		b = b[:n+len(typeObject)+1]
		copy(b[1+len(typeObject)+1:], b[1:n])
		copy(b[1:], typeObject)
		b[1+len(typeObject)] = ','
	}
	return b, nil
}

// errNotJSON: checkRootType found the text is not valid JSON.
var errNotJSON = errors.New("not JSON")

// checkRootType reads a JSON object, validating it, and reports whether one of its root
// members is "type"; every one that is must be "object" (which of two duplicates Bedrock
// reads is not documented). Text that is not JSON is errNotJSON.
func checkRootType(obj []byte) (found bool, err error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(obj), bedrock.Lenient) // a Buffer is read in place, not copied
	defer func() {
		if err == nil {
			if _, eof := dec.ReadToken(); eof != io.EOF { // the object ends the text
				found, err = false, errNotJSON
			}
		}
	}()
	if _, err := dec.ReadToken(); err != nil { // {
		return false, errNotJSON
	}
	for {
		if k := dec.PeekKind(); k != '"' {
			if _, err := dec.ReadToken(); err != nil { // }, or the error
				return false, errNotJSON
			}
			return found, nil
		}
		name, err := dec.ReadToken()
		if err != nil {
			return false, errNotJSON
		}
		if name.String() != "type" {
			if err := dec.SkipValue(); err != nil {
				return false, errNotJSON
			}
			continue
		}
		found = true
		val, err := dec.ReadValue()
		switch {
		case err != nil:
			return false, errNotJSON
		case val.Kind() != '"':
			return false, schemaError(`must be a JSON Schema whose root "type" is "object"`)
		}
		var got string
		if err := json.Unmarshal(val, &got); err != nil || got != "object" {
			return false, schemaError(fmt.Sprintf(`must be a JSON Schema whose root "type" is "object", not %s`, clip.Quote(got)))
		}
	}
}

// bedrockToolChoice gates the client's choice on what the model accepts (rule 12): a kind
// the model refuses falls back to auto (recorded in Stats.ToolChoiceFallback), and auto
// itself is left out when the model does not list it, since it is Bedrock's default.
func bedrockToolChoice(mode, bedrockName string, model capabilities.Model, stats *Stats) *bedrock.ToolChoice {
	switch mode {
	case chat.ChoiceRequired:
		if model.SupportsChoice(capabilities.ChoiceAny) {
			return &bedrock.ToolChoice{Any: &struct{}{}}
		}
		stats.ToolChoiceFallback = capabilities.ChoiceAny
	case chat.ChoiceFunction:
		if model.SupportsChoice(capabilities.ChoiceTool) {
			return &bedrock.ToolChoice{Tool: &bedrock.SpecificToolChoice{Name: bedrockName}}
		}
		stats.ToolChoiceFallback = capabilities.ChoiceTool
	case chat.ChoiceAuto:
	default: // unset: Bedrock's default is auto; send nothing.
		return nil
	}
	if model.SupportsChoice(capabilities.ChoiceAuto) {
		return &bedrock.ToolChoice{Auto: &struct{}{}}
	}
	return nil
}

// toolConfig builds toolConfig from the tools and tool_choice: rule 8 (never empty),
// rule 12 (choice gated on the model), rule 13 (required when the history holds tool use).
func toolConfig(req *chat.Request, names *namer, model capabilities.Model, stats *Stats) (*bedrock.ToolConfig, error) {
	choice := req.ToolChoice
	switch {
	case choice.Mode == chat.ChoiceFunction && !hasTool(req.Tools, choice.Function):
		return nil, invalidf("tool_choice.function.name %s names no tool in tools", clip.Quote(choice.Function))
	case choice.Mode == chat.ChoiceRequired && len(req.Tools) == 0:
		return nil, invalidf(`tool_choice "required" needs at least one tool in tools`)
	}
	for i, name := range choice.Allowed {
		if !hasTool(req.Tools, name) {
			return nil, invalidf("tool_choice.allowed_tools.tools[%d] %s names no tool in tools", i, clip.Quote(name))
		}
	}
	history := len(names.historyNames) > 0
	if !history && (len(req.Tools) == 0 || choice.Mode == chat.ChoiceNone) {
		return nil, nil
	}
	if !model.Tools {
		return nil, fault.Refuse(fault.ErrUnsupported, fault.ReasonUnsupportedParameter,
			"model %s does not support tool use; remove the tools and tool calls or choose a model that supports them", clip.String(model.ID, clip.LogMax)).At("tools")
	}
	cfg := &bedrock.ToolConfig{Tools: make([]bedrock.Tool, 0, max(len(req.Tools), 1))}
	specs := make([]bedrock.ToolSpec, len(req.Tools)) // one allocation for all
	for i := range req.Tools {
		t := &req.Tools[i]
		if choice.Allowed != nil && !slices.Contains(choice.Allowed, t.Name) {
			continue // not offered to the model on this request
		}
		if err := toolSpec(&specs[i], i, t, names.toolName(t.Name), model); err != nil {
			return nil, err
		}
		cfg.Tools = append(cfg.Tools, bedrock.Tool{ToolSpec: &specs[i]})
	}
	if len(req.Tools) == 0 {
		// History with tool use but no tools: make up a minimal spec per name used.
		for _, n := range names.historyNames {
			cfg.Tools = append(cfg.Tools, bedrock.Tool{ToolSpec: &bedrock.ToolSpec{
				Name:        names.toolName(n),
				InputSchema: bedrock.InputSchema{JSON: historyToolSchema},
			}})
		}
		stats.SynthesizedToolSpecs = len(names.historyNames)
		return cfg, nil
	}
	if choice.Mode != chat.ChoiceNone {
		cfg.ToolChoice = bedrockToolChoice(choice.Mode, names.toolName(choice.Function), model, stats)
	}
	return cfg, nil
}

func hasTool(tools []chat.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
