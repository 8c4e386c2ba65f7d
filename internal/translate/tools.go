package translate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsontext"
)

// maxNameLen is Bedrock's limit for toolSpec.name and toolUseId (rules 9 and 14).
const maxNameLen = 64

// emptyObjectSchema is the schema of a tool that declares no parameters (docs/PROTOCOL.md 3:
// missing parameters means an object with no properties).
var emptyObjectSchema = []byte(`{"type":"object","properties":{}}`)

// historyToolSchema is the schema of a tool spec made up for a name found only in history:
// rule 13 wants a toolConfig whenever toolUse/toolResult blocks are present.
var historyToolSchema = []byte(`{"type":"object"}`)

// Names maps the Bedrock-safe tool names and tool-use ids of one translated request back to
// the client's own (docs/BEDROCK.md C: names like "fs.read_file", 80-character names and foreign
// 90-character ids are replaced for Bedrock and restored in every response and stream
// event). Request builds it; after Request returns it is only read, so one Names may be
// shared by the goroutines serving that request. A nil *Names maps everything to itself.
type Names struct {
	// Stats counts what Request repaired in the client's history, for logs and metrics.
	Stats Stats

	toolToClient map[string]string // Bedrock tool name → client tool name, only where they differ
	idToClient   map[string]string // Bedrock toolUseId → client tool_call id, only where they differ
}

// Stats says what Request repaired or changed, so the caller can log and count it
// (docs/BEDROCK.md C: synthesized and orphan results are "logged and counted").
type Stats struct {
	// SynthesizedResults: toolUse blocks with no answer in the next user turn, given an
	// error toolResult so the conversation stays valid (rule 15) and the model can call again.
	SynthesizedResults int
	// OrphanResults: tool messages whose tool_call_id matched no unanswered call of the
	// preceding assistant turn, sent as plain user text instead of a toolResult (rule 16).
	OrphanResults int
	// MappedToolNames and MappedToolCallIDs: client names and ids replaced by Bedrock-safe
	// substitutes (rules 9 and 14, and duplicate ids).
	MappedToolNames   int
	MappedToolCallIDs int
	// SynthesizedToolSpecs: tool specs made up for tool names found only in the history,
	// because the request had no tools but rule 13 wants a toolConfig.
	SynthesizedToolSpecs int
	// ToolChoiceFallback is the toolChoice kind the client asked for ("any" or "tool") that
	// the model does not accept; the request was sent with "auto" (or none) instead.
	ToolChoiceFallback string
	// DroppedTopP: top_p was dropped because the model refuses temperature and top_p together.
	DroppedTopP bool
}

// ToolName returns the client's name for a tool name Bedrock used.
func (n *Names) ToolName(bedrockName string) string {
	if n != nil {
		if c, ok := n.toolToClient[bedrockName]; ok {
			return c
		}
	}
	return bedrockName
}

// ToolCallID returns the client's id for a toolUseId Bedrock used.
func (n *Names) ToolCallID(bedrockID string) string {
	if n != nil {
		if c, ok := n.idToClient[bedrockID]; ok {
			return c
		}
	}
	return bedrockID
}

// validName reports whether s satisfies Bedrock's [a-zA-Z0-9_-]{1,64} (rules 9 and 14; the
// newer models also allow '.' and ':' in ids, but the stricter set is valid everywhere).
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !validNameByte(s[i]) {
			return false
		}
	}
	return true
}

func validNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// allocator hands out Bedrock-safe substitutes that collide neither with each other nor
// with any valid name the client used anywhere in the request (those are reserved first,
// so a valid name is never bent to make room for an invalid one). Substitutes depend only
// on the request, so the same request always translates to the same bytes. Not safe for
// concurrent use.
type allocator struct {
	reserved map[string]bool // valid client names, before any allocation
	used     map[string]bool // Bedrock names handed out
}

func newAllocator() allocator {
	return allocator{reserved: map[string]bool{}, used: map[string]bool{}}
}

func (a *allocator) reserve(s string) {
	if validName(s) {
		a.reserved[s] = true
	}
}

// take returns s itself when it is valid and not handed out yet; otherwise a substitute.
// occurrence tells apart repeated uses of one client string that need distinct results
// (a tool-call id reused by a later turn).
func (a *allocator) take(s string, occurrence int) string {
	if validName(s) && !a.used[s] {
		a.used[s] = true
		return s
	}
	// Readable first: the client string with invalid characters replaced ("fs.read" →
	// "fs_read"), when that fits and collides with nothing.
	base := sanitize(s)
	if !validName(s) && validName(base) && !a.reserved[base] && !a.used[base] {
		a.used[base] = true
		return base
	}
	// Else a prefix plus a hash of the original, which keeps names that differ only past
	// the 64th character, or only in replaced characters, apart.
	const hashLen = 8
	prefix := base
	if len(prefix) > maxNameLen-hashLen-1 {
		prefix = prefix[:maxNameLen-hashLen-1]
	}
	for salt := 0; ; salt++ {
		sum := sha256.Sum256([]byte(strconv.Itoa(occurrence) + "\x00" + strconv.Itoa(salt) + "\x00" + s))
		h := hex.EncodeToString(sum[:hashLen/2])
		cand := h
		if prefix != "" {
			cand = prefix + "_" + h
		}
		if !a.reserved[cand] && !a.used[cand] {
			a.used[cand] = true
			return cand
		}
	}
}

// sanitize replaces every character outside [a-zA-Z0-9_-] with '_' (one per rune, so a
// multi-byte character does not become several) and cuts the result to 64 bytes.
func sanitize(s string) string {
	b := make([]byte, 0, min(len(s), maxNameLen))
	for i := 0; i < len(s) && len(b) < maxNameLen; {
		c := s[i]
		if validNameByte(c) {
			b = append(b, c)
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b = append(b, '_')
		i += size
	}
	return string(b)
}

// toolDef is one tool of the request.
type toolDef struct {
	name, description string
	parameters        []byte // the schema as JSON text; empty means none
	path              string // "tools[2].function" or "tools[2]", for error messages
}

// readTools checks the tools' types and names.
func readTools(tools []chat.Tool) ([]toolDef, error) {
	defs := make([]toolDef, 0, len(tools))
	seen := make(map[string]int, len(tools))
	for i, t := range tools {
		if t.Type != "" && t.Type != "function" {
			return nil, invalidf("tools[%d].type %s is not supported; the only tool type is \"function\"", i, clip.Quote(t.Type))
		}
		d := toolDef{name: t.Name, description: t.Description, parameters: t.Parameters, path: "tools[" + strconv.Itoa(i) + "]"}
		if t.Wrapped {
			d.path += ".function"
		}
		if d.name == "" {
			return nil, invalidf("%s.name is empty", d.path)
		}
		if j, dup := seen[d.name]; dup {
			return nil, invalidf("%s.name %s is a duplicate of tools[%d]", d.path, clip.Quote(d.name), j)
		}
		seen[d.name] = i
		defs = append(defs, d)
	}
	return defs, nil
}

// toolSpec builds the Bedrock tool spec of one tool.
func toolSpec(d toolDef, bedrockName string) (bedrock.Tool, error) {
	schema, err := inputSchema(d)
	if err != nil {
		return bedrock.Tool{}, invalidf("%s.parameters %s", d.path, err.Error())
	}
	spec := &bedrock.ToolSpec{Name: bedrockName, InputSchema: bedrock.InputSchema{JSON: schema}}
	// Rule 10: a present description must not be empty.
	if !isBlank(d.description) {
		spec.Description = d.description
	}
	return bedrock.Tool{ToolSpec: spec}, nil
}

// schemaError is a reason a parameters schema is refused; the caller adds the path.
type schemaError string

func (e schemaError) Error() string { return string(e) }

// inputSchema is the inputSchema.json of a tool: its parameters, else an object with no
// properties (docs/PROTOCOL.md 3). Rule 11: the root type must be "object"; a missing type
// is set.
func inputSchema(d toolDef) ([]byte, error) {
	if len(d.parameters) == 0 {
		return emptyObjectSchema, nil
	}
	return jsonSchema(d.parameters)
}

// typeObject is the member a schema without a root "type" gets (rule 11).
const typeObject = `"type":"object"`

// jsonSchema checks a schema given as JSON text and returns it as Bedrock gets it: compacted, and otherwise the
// client's bytes (key order, escapes, numbers such as 12345678901234567890 or 0.1, no HTML
// escaping), so the model sees the schema the client wrote and the prompt cache sees the
// same bytes every time. It is validated, never decoded. A missing root "type" is inserted
// as the first member, so no other member is rewritten; {} becomes emptyObjectSchema, as
// an empty Struct does.
func jsonSchema(s []byte) ([]byte, error) {
	if !utf8.Valid(s) {
		return nil, schemaError("is not valid UTF-8")
	}
	// One allocation: the text, compacted in place, with room to insert the type member.
	b := make([]byte, len(s), len(s)+len(typeObject)+1)
	copy(b, s)
	b, err := jsontext.Compact(b[:0], b)
	if err != nil {
		return nil, schemaError(notJSON(err))
	}
	if b[0] != '{' {
		return nil, schemaError("must be a JSON object, not " + jsonKind(b[0]))
	}
	if len(b) == 2 { // {}
		return emptyObjectSchema, nil
	}
	found := false
	for i := 1; b[i] != '}'; {
		keyEnd := stringEnd(b, i)
		valEnd := valueEnd(b, keyEnd+1)
		if isJSONString(b[i:keyEnd], "type") {
			// Every root "type" must say object: which of two duplicates Bedrock reads is
			// not documented.
			found = true
			val := b[keyEnd+1 : valEnd]
			if val[0] != '"' {
				return nil, schemaError(`must be a JSON Schema whose root "type" is "object"`)
			}
			if !isJSONString(val, "object") {
				var got string
				_ = json.Unmarshal(val, &got)
				return nil, schemaError(fmt.Sprintf(`must be a JSON Schema whose root "type" is "object", not %s`, clip.Quote(got)))
			}
		}
		i = valEnd
		if b[i] == ',' {
			i++
		}
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

// stringEnd returns the index just past the JSON string that starts at b[i] (a '"') in
// valid JSON.
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index just past the value that starts at b[i] in valid, compact
// JSON.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// isJSONString reports whether raw, a valid JSON string with its quotes, holds want. Escapes
// ("typ\u0065") are rare, so only then is the string decoded.
func isJSONString(raw []byte, want string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == want
	}
	var got string
	return json.Unmarshal(raw, &got) == nil && got == want
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
func (t *translator) toolConfig(defs []toolDef, choice chat.ToolChoice) (*bedrock.ToolConfig, error) {
	switch {
	case choice.Mode == chat.ChoiceFunction && !hasTool(defs, choice.Function):
		return nil, invalidf("tool_choice.function.name %s names no tool in tools", clip.Quote(choice.Function))
	case choice.Mode == chat.ChoiceRequired && len(defs) == 0:
		return nil, invalidf(`tool_choice "required" needs at least one tool in tools`)
	}
	history := false
	for _, u := range t.turns {
		history = history || len(u.calls) > 0
	}
	if !history && (len(defs) == 0 || choice.Mode == chat.ChoiceNone) {
		return nil, nil
	}
	if !t.model.Tools {
		return nil, fmt.Errorf("%w: model %s does not support tool use; remove the tools and tool calls or choose a model that supports them", ErrUnsupported, clip.String(t.model.ID, clip.LogMax))
	}
	cfg := &bedrock.ToolConfig{Tools: make([]bedrock.Tool, 0, max(len(defs), 1))}
	for _, d := range defs {
		spec, err := toolSpec(d, t.nameOf[d.name])
		if err != nil {
			return nil, err
		}
		cfg.Tools = append(cfg.Tools, spec)
	}
	if len(defs) == 0 {
		// History with tool use but no tools: make up a minimal spec per name used.
		for _, n := range t.historyNames {
			cfg.Tools = append(cfg.Tools, bedrock.Tool{ToolSpec: &bedrock.ToolSpec{
				Name:        t.nameOf[n],
				InputSchema: bedrock.InputSchema{JSON: historyToolSchema},
			}})
		}
		t.names.Stats.SynthesizedToolSpecs = len(t.historyNames)
		return cfg, nil
	}
	if choice.Mode != chat.ChoiceNone {
		cfg.ToolChoice = bedrockToolChoice(choice.Mode, t.nameOf[choice.Function], t.model, &t.names.Stats)
	}
	return cfg, nil
}

func hasTool(defs []toolDef, name string) bool {
	for _, d := range defs {
		if d.name == name {
			return true
		}
	}
	return false
}
