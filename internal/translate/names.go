package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
)

// maxNameLen is Bedrock's limit for toolSpec.name and toolUseId (rules 9 and 14).
const maxNameLen = 64

// Plan is the translation plan of one request: what its answer needs to be translated
// back. It maps the Bedrock-safe tool names and tool-use ids back to the client's own
// (docs/BEDROCK.md C: names like "fs.read_file", 80-character names and foreign
// 90-character ids are replaced for Bedrock and restored in every response and stream
// event), and says what the request decided for its answer: one call or several, a spent
// tool budget, thinking, the answer tool of a json_schema request, the output schema, and
// what the translation repaired. Request builds it; after Request returns it is only read,
// so one Plan may be shared by the goroutines serving that request. A nil *Plan maps
// everything to itself.
type Plan struct {
	// Stats counts what Request repaired in the client's history, for logs and metrics.
	Stats Stats
	// Ignored lists the JSON paths of request fields Request accepted without effect
	// (docs/PROTOCOL.md 10.1).
	Ignored []string
	// OneCall: the answer keeps only its first tool call (parallel_tool_calls false, asked
	// for or automatic; docs/PROTOCOL.md 13.4).
	OneCall bool
	// BudgetExhausted: max_tool_rounds were spent; the answer keeps no tool call
	// (docs/PROTOCOL.md 13.5).
	BudgetExhausted bool
	// ThinkingOn: Claude's extended thinking is on for the request, so an answer's
	// reasoning blocks must come back with its tool calls (docs/PROTOCOL.md 11.4).
	ThinkingOn bool
	// Thinking is the outcome for extended thinking when the request asked for it and the
	// history turned it off (a chat.Thinking outcome); "" otherwise.
	Thinking string
	// StreamOnly: the request's maxTokens is above what Converse serves with thinking on,
	// so even a unary answer must come through ConverseStream (docs/BEDROCK.md G12).
	StreamOnly bool
	// AnswerTool is the Bedrock name of the synthetic tool through which the model gives a
	// json_schema answer (docs/PROTOCOL.md 13.3): its input is the answer's text, and its
	// calls are never tool calls. "" when the request offers none.
	AnswerTool string
	// OutputSchema: the request carries outputConfig, a json_schema on a model with
	// structured output; Bedrock's refusal of it names response_format.json_schema.schema.
	OutputSchema bool
	// JSONObject: the request asked for a json_object answer, which the caller checks
	// with OneJSONObject.
	JSONObject bool

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
	// Cache is what became of the prompt-cache points (docs/PROTOCOL.md 12); not a repair.
	Cache CacheStats
	// PartialResults: assistant turns with several tool calls of which the client answered
	// some, not all.
	PartialResults int
	// UnsignedReasoning: reasoning blocks in the history left out because they cannot be
	// replayed (a thinking block without signature, a redacted one without data).
	UnsignedReasoning int
	// ParallelDisabled: parallel tool calls were turned off for this request because the
	// client has shown it answers only some of them (PartialResults) and did not set
	// parallel_tool_calls itself.
	ParallelDisabled bool
	// ParallelRemembered: parallel tool calls were turned off for this request because an
	// earlier request of its client showed it answers only some of them (Options.
	// FirstResultOnly); the request's history did not, and it did not set
	// parallel_tool_calls. Not a repair: the client's known habit.
	ParallelRemembered bool
}

// FirstCallOnly reports whether the answer keeps only its first tool call.
func (n *Plan) FirstCallOnly() bool { return n != nil && n.OneCall }

// ToolName returns the client's name for a tool name Bedrock used.
func (n *Plan) ToolName(bedrockName string) string {
	if n != nil {
		if c, ok := n.toolToClient[bedrockName]; ok {
			return c
		}
	}
	return bedrockName
}

// ToolCallID returns the client's id for a toolUseId Bedrock used.
func (n *Plan) ToolCallID(bedrockID string) string {
	if n != nil {
		if c, ok := n.idToClient[bedrockID]; ok {
			return c
		}
	}
	return bedrockID
}

// namer hands out the Bedrock names of one request: newNamer checks every tool and tool
// call and gives each tool name its Bedrock name, then messages takes a toolUseId per call
// and tools reads the names. Not safe for concurrent use.
type namer struct {
	names *Plan

	tools   allocator         // Bedrock tool names
	ids     allocator         // Bedrock toolUseIds
	nameOf  map[string]string // client tool name → Bedrock tool name
	idCount map[string]int    // client tool-call id → uses so far (a reused id gets a new Bedrock id)

	historyNames []string // client tool names used by history tool calls, first use first

	hints hintSources // the client's cache hints behind the request's cachePoints
}

// newNamer checks the request's tools and the history's tool calls, and names every tool
// (rule 9): the client's valid names and ids are all reserved before any substitute is
// handed out, so a substitute can never take a name or id the client uses elsewhere in
// the request; tools are named first, then names only the history uses.
func newNamer(req *chat.Request) (*namer, error) {
	// Plan apart: it lives as long as the request's answer (a stream's), the namer only as
	// long as the translation.
	n := &namer{names: &Plan{}, nameOf: make(map[string]string, len(req.Tools))}
	seen := make(map[string]int, len(req.Tools))
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.Type != "" && t.Type != "function" {
			return nil, unsupportedf("tools[%d].type %s is not supported; the only tool type is \"function\"", i, clip.Quote(t.Type))
		}
		if t.Name == "" {
			return nil, invalidf("%s.name is empty", ToolPath(i, t))
		}
		if j, dup := seen[t.Name]; dup {
			return nil, invalidf("%s.name %s is a duplicate of tools[%d]", ToolPath(i, t), clip.Quote(t.Name), j)
		}
		seen[t.Name] = i
	}
	history := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != chat.RoleAssistant {
			continue // tool calls elsewhere are refused with their message
		}
		for j, tc := range m.ToolCalls {
			switch {
			case tc.Type != "" && tc.Type != "function":
				return nil, unsupportedf("messages[%d].tool_calls[%d].type %s is not supported; the only tool call type is \"function\"", i, j, clip.Quote(tc.Type))
			case tc.ID == "":
				return nil, invalidf("messages[%d].tool_calls[%d].id is empty", i, j)
			case tc.Name == "":
				return nil, invalidf("messages[%d].tool_calls[%d].function.name is empty", i, j)
			}
			n.ids.reserve(tc.ID)
			if !history[tc.Name] {
				history[tc.Name] = true
				n.historyNames = append(n.historyNames, tc.Name)
				n.tools.reserve(tc.Name)
			}
		}
	}
	for _, t := range req.Tools {
		n.tools.reserve(t.Name)
	}
	for _, t := range req.Tools {
		n.nameTool(t.Name)
	}
	for _, name := range n.historyNames {
		n.nameTool(name)
	}
	return n, nil
}

// ToolPath names tool i of a request in errors: "tools[2].function" for the wrapped form
// ({type, function}), "tools[2]" for the flat one; its fields follow ("….parameters").
func ToolPath(i int, t *chat.Tool) string {
	path := "tools[" + strconv.Itoa(i) + "]"
	if t.Wrapped {
		path += ".function"
	}
	return path
}

func (n *namer) nameTool(name string) {
	if _, done := n.nameOf[name]; done {
		return
	}
	b := n.tools.take(name, 0)
	n.nameOf[name] = b
	if b != name {
		if n.names.toolToClient == nil {
			n.names.toolToClient = map[string]string{}
		}
		n.names.toolToClient[b] = name
		n.names.Stats.MappedToolNames++
	}
}

// toolName is the Bedrock name of a client tool name newNamer saw.
func (n *namer) toolName(name string) string { return n.nameOf[name] }

// callID hands out the toolUseId for one client tool call (rule 14; a reused id gets a
// fresh one, since each toolUse needs its own result).
func (n *namer) callID(clientID string) string {
	k := n.idCount[clientID]
	if n.idCount == nil {
		n.idCount = map[string]int{}
	}
	n.idCount[clientID] = k + 1
	b := n.ids.take(clientID, k)
	if b != clientID {
		if n.names.idToClient == nil {
			n.names.idToClient = map[string]string{}
		}
		n.names.idToClient[b] = clientID
		n.names.Stats.MappedToolCallIDs++
	}
	return b
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
// on the request, so the same request always translates to the same bytes. The zero value
// is ready; its sets are made on first use. Not safe for concurrent use.
type allocator struct {
	reserved map[string]bool // valid client names, before any allocation
	used     map[string]bool // Bedrock names handed out
}

func (a *allocator) reserve(s string) {
	if validName(s) {
		if a.reserved == nil {
			a.reserved = map[string]bool{}
		}
		a.reserved[s] = true
	}
}

// use records s as handed out.
func (a *allocator) use(s string) {
	if a.used == nil {
		a.used = map[string]bool{}
	}
	a.used[s] = true
}

// take returns s itself when it is valid and not handed out yet; otherwise a substitute.
// occurrence tells apart repeated uses of one client string that need distinct results
// (a tool-call id reused by a later turn).
func (a *allocator) take(s string, occurrence int) string {
	if validName(s) && !a.used[s] {
		a.use(s)
		return s
	}
	// Readable first: the client string with invalid characters replaced ("fs.read" →
	// "fs_read"), when that fits and collides with nothing.
	base := sanitize(s)
	if !validName(s) && validName(base) && !a.reserved[base] && !a.used[base] {
		a.use(base)
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
			a.use(cand)
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
