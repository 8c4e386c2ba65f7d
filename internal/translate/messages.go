package translate

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// Texts the translator writes where Bedrock needs a block the client did not send. None is
// blank (rule 4).
const (
	// leadingUserText opens a conversation whose first turn is the assistant's (rule 1).
	leadingUserText = "(conversation start)"
	// missingResultText answers a toolUse the client never answered (rule 15), so the model
	// sees the call failed and can call again.
	missingResultText = "No result was provided for this tool call."
	// emptyResultText stands for a tool message with empty content (rules 4 and 18).
	emptyResultText = "(empty)"
	// attachedPrefix opens the text a user turn with documents and no text gets, followed by
	// the documents' names: Bedrock wants a text block beside documents (K rule 3).
	attachedPrefix = "Attached: "
)

// messages turns the client's messages into Converse's system blocks and messages,
// taking a toolUseId for every call from names and counting its repairs in stats.
// With keepReasoning, assistant turns start with the reasoning blocks their messages carry.
func messages(msgs []chat.Message, names *namer, model capabilities.Model, keepReasoning bool, stats *Stats) ([]bedrock.SystemBlock, []bedrock.Message, error) {
	c := conversation{names: names, model: model, keepReasoning: keepReasoning, stats: stats}
	for i := range msgs {
		if err := c.message(i, &msgs[i]); err != nil {
			return nil, nil, err
		}
	}
	out, err := c.assemble()
	if err != nil {
		return nil, nil, err
	}
	return c.system, out, nil
}

// conversation is the history being assembled. Not safe for concurrent use.
type conversation struct {
	names         *namer
	model         capabilities.Model
	keepReasoning bool
	stats         *Stats

	turns  []*turn
	system []bedrock.SystemBlock
	media  media
}

// turn is one Converse message being assembled from one or more client messages.
type turn struct {
	role string
	last int // index of the last client message merged into it, for error messages

	// assistant
	reasoning []bedrock.ContentBlock
	text      []bedrock.ContentBlock
	uses      []bedrock.ContentBlock
	calls     []*call

	// user
	prev  *turn // the assistant turn before, whose calls this turn answers; nil if none
	other []bedrock.ContentBlock
}

// call is one toolUse of an assistant turn and the answer found for it.
type call struct {
	clientID, bedrockID string
	result              *bedrock.ToolResultBlock
	// points go right after the result: its tool message's cache points.
	points []bedrock.ContentBlock
}

// message adds one client message to the conversation.
func (c *conversation) message(i int, m *chat.Message) error {
	role := m.Role
	if role != chat.RoleAssistant && len(m.ToolCalls) > 0 {
		return invalidf("messages[%d].tool_calls: only assistant messages carry tool calls", i)
	}
	switch role {
	case chat.RoleSystem, chat.RoleDeveloper:
		// Rule 5: system prompts live in the top-level system array, wherever the client
		// put them.
		blocks, err := c.textsOf(i, m, "system")
		if err != nil {
			return err
		}
		for _, b := range c.messageEnd(blocks, i, m) {
			s := bedrock.SystemBlock{CachePoint: b.CachePoint}
			if b.Text != nil {
				s.Text = *b.Text
			}
			c.system = append(c.system, s)
		}
	case chat.RoleUser:
		blocks, err := c.userBlocks(i, m)
		if err != nil {
			return err
		}
		if blocks = c.messageEnd(blocks, i, m); len(blocks) > 0 {
			u := c.turn(chat.RoleUser, i)
			u.other = append(u.other, blocks...)
		}
	case chat.RoleAssistant:
		return c.assistant(i, m)
	case chat.RoleTool:
		return c.toolMessage(i, m)
	case "function":
		return unsupportedf(`messages[%d].role "function" is deprecated and not supported; answer tool calls with "tool" messages`, i)
	case "":
		return invalidf("messages[%d].role is missing", i)
	default:
		return invalidf("messages[%d].role %s is not one of system, developer, user, assistant, tool", i, clip.Quote(role))
	}
	return nil
}

// turn returns the open turn of the role, opening a new one when the last turn has the
// other role. Adjacent same-role messages merge into one turn, since Converse does not
// merge neighbours (rule 2).
func (c *conversation) turn(role string, i int) *turn {
	if n := len(c.turns); n > 0 && c.turns[n-1].role == role {
		last := c.turns[n-1]
		last.last = i
		return last
	}
	u := &turn{role: role, last: i}
	if n := len(c.turns); n > 0 && role == chat.RoleUser {
		u.prev = c.turns[n-1]
	}
	c.turns = append(c.turns, u)
	return u
}

func (c *conversation) assistant(i int, m *chat.Message) error {
	texts, err := c.textsOf(i, m, "assistant")
	if err != nil {
		return err
	}
	if len(texts) == 0 && len(m.ToolCalls) == 0 {
		// Whitespace-only text is dropped and an assistant message left empty is skipped
		// (rules 3 and 4).
		c.messageEnd(nil, i, m)
		return nil
	}
	a := c.turn(chat.RoleAssistant, i)
	if c.keepReasoning {
		a.reasoning = append(a.reasoning, reasoningBlocks(m, c.stats)...)
	}
	a.text = append(a.text, texts...)
	for j, tc := range m.ToolCalls {
		input, err := toolInput(tc.Arguments)
		if err != nil {
			return invalidf("messages[%d].tool_calls[%d].function.arguments %s", i, j, err.Error())
		}
		cl := &call{clientID: tc.ID, bedrockID: c.names.callID(tc.ID)}
		a.calls = append(a.calls, cl)
		a.uses = append(a.uses, bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{
			ToolUseID: cl.bedrockID,
			Name:      c.names.toolName(tc.Name),
			Input:     input,
		}})
	}
	// The message's point goes after its last block: its last call, else its last text.
	if len(m.ToolCalls) > 0 {
		a.uses = c.messagePoint(a.uses, i, m)
	} else {
		a.text = c.messagePoint(a.text, i, m)
	}
	return nil
}

// toolMessage turns a tool message into a toolResult for the matching call of the
// assistant turn just before, or into plain user text when nothing matches (rule 16).
func (c *conversation) toolMessage(i int, m *chat.Message) error {
	id := m.ToolCallID
	if id == "" {
		return invalidf("messages[%d].tool_call_id is missing; a tool message must name the call it answers", i)
	}
	text, images, err := c.toolContent(i, m)
	if err != nil {
		return err
	}
	u := c.turn(chat.RoleUser, i)
	if cl := u.prev.unanswered(id); cl != nil {
		cl.result = &bedrock.ToolResultBlock{ToolUseID: cl.bedrockID, Content: resultContent(text, images)}
		if m.ToolError {
			// The tool failed (Anthropic's is_error): the model is told so, as it is of a
			// call left unanswered, on every family.
			cl.result.Status = bedrock.StatusError
		}
		cl.points = c.toolMessagePoints(i, m)
		return nil
	}
	c.stats.OrphanResults++
	label := id
	if n := m.Name; n != "" {
		label += " (" + n + ")"
	}
	if isBlank(text) {
		text = emptyResultText
	}
	u.other = append(u.other, bedrock.TextBlock("Tool result for "+label+": "+text))
	for _, img := range images {
		u.other = append(u.other, bedrock.ContentBlock{Image: img.Image})
	}
	u.other = append(u.other, c.toolMessagePoints(i, m)...)
	return nil
}

// unanswered returns the first call of the assistant turn with the client id that has no
// result yet.
func (a *turn) unanswered(clientID string) *call {
	if a == nil {
		return nil
	}
	for _, cl := range a.calls {
		if cl.clientID == clientID && cl.result == nil {
			return cl
		}
	}
	return nil
}

// assemble writes the Converse messages from the turns and applies the conversation rules
// that depend on the whole history.
func (c *conversation) assemble() ([]bedrock.Message, error) {
	hasUser := false
	for _, u := range c.turns {
		hasUser = hasUser || u.role == chat.RoleUser
	}
	if !hasUser {
		return nil, invalidf("messages: the conversation needs at least one user or tool message with content")
	}
	out := make([]bedrock.Message, 0, len(c.turns)+1)
	if c.turns[0].role == chat.RoleAssistant {
		// Rule 1: a conversation starts with a user message.
		out = append(out, bedrock.Message{Role: bedrock.RoleUser, Content: []bedrock.ContentBlock{bedrock.TextBlock(leadingUserText)}})
	}
	for _, u := range c.turns {
		if u.role == chat.RoleAssistant {
			// Reasoning first (docs/BEDROCK.md G7), then text, then tool calls.
			content := make([]bedrock.ContentBlock, 0, len(u.reasoning)+len(u.text)+len(u.uses))
			content = append(append(append(content, u.reasoning...), u.text...), u.uses...)
			out = append(out, bedrock.Message{Role: bedrock.RoleAssistant, Content: content})
			continue
		}
		var content []bedrock.ContentBlock
		if u.prev != nil {
			content = c.results(u.prev, len(u.other))
		}
		content = append(content, u.other...)
		if text, ok := attachedText(u.other); ok {
			content = append(content, text)
		}
		out = append(out, bedrock.Message{Role: bedrock.RoleUser, Content: content})
	}
	last := c.turns[len(c.turns)-1]
	switch {
	case last.role == chat.RoleAssistant && len(last.calls) > 0:
		// The history ends with the assistant's calls and no results yet. Rule 15 wants a
		// result for each, and Claude refuses a trailing assistant turn when tools are in
		// use, so the calls get the same error results as unanswered ones, in a user turn
		// of their own, and the model can call again.
		out = append(out, bedrock.Message{Role: bedrock.RoleUser, Content: c.results(last, 0)})
	case last.role == chat.RoleAssistant && c.model.NoPrefill:
		// Rule 7: refuse here rather than let Bedrock refuse it.
		return nil, invalidf("messages[%d]: model %s does not support assistant prefill; the conversation must end with a user or tool message", last.last, c.model.ID)
	}
	return out, nil
}

// results returns the toolResult blocks of the user turn after assistant turn a, with room
// for extra more blocks: rule 15, a result for every toolUse of a, in the order of the
// calls, a synthesized error result where the client sent none; and rule 19, results come
// before any other block.
func (c *conversation) results(a *turn, extra int) []bedrock.ContentBlock {
	if len(a.calls) == 0 {
		return nil
	}
	content := make([]bedrock.ContentBlock, 0, len(a.calls)+extra)
	answered := 0
	for _, cl := range a.calls {
		if cl.result != nil {
			answered++
		}
	}
	if answered > 0 && answered < len(a.calls) {
		// The client ran some of the parallel calls and sent back only their results, as
		// the deployed gollm client does with all but the first (docs/PROTOCOL.md 13.4).
		c.stats.PartialResults++
	}
	for _, cl := range a.calls {
		r := cl.result
		if r == nil {
			c.stats.SynthesizedResults++
			r = &bedrock.ToolResultBlock{
				ToolUseID: cl.bedrockID,
				Status:    bedrock.StatusError,
				Content:   []bedrock.ToolResultContentBlock{{Text: ptr(missingResultText)}},
			}
		}
		content = append(content, bedrock.ContentBlock{ToolResult: r})
		content = append(content, cl.points...)
	}
	return content
}

// textsOf returns the text blocks of the non-blank texts of a system or assistant message,
// each followed by the cache point its part asks for: its parts when it has any, else its
// content. An assistant's reasoning parts are not text: reasoningBlocks takes them when the
// request keeps reasoning, and they are listed as ignored otherwise.
func (c *conversation) textsOf(i int, m *chat.Message, role string) ([]bedrock.ContentBlock, error) {
	if len(m.Parts) == 0 {
		if isBlank(m.Content) {
			return nil, nil
		}
		return []bedrock.ContentBlock{bedrock.TextBlock(m.Content)}, nil
	}
	var texts []bedrock.ContentBlock
	for j := range m.Parts {
		p := &m.Parts[j]
		kind, err := partKindFor(i, j, p, role)
		if err != nil {
			return nil, err
		}
		if kind == partReasoning {
			if !c.keepReasoning {
				c.names.names.Ignored = append(c.names.names.Ignored, partPath(i, j))
			}
			continue
		}
		n := len(texts)
		if !isBlank(p.Text) {
			texts = append(texts, bedrock.TextBlock(p.Text))
		}
		texts = c.partPoint(texts, n, i, j, p)
	}
	return texts, nil
}

// userBlocks returns the content blocks of a user message; blank text is dropped (rule 4).
func (c *conversation) userBlocks(i int, m *chat.Message) ([]bedrock.ContentBlock, error) {
	if len(m.Parts) == 0 {
		if isBlank(m.Content) {
			return nil, nil
		}
		return []bedrock.ContentBlock{bedrock.TextBlock(m.Content)}, nil
	}
	blocks := make([]bedrock.ContentBlock, 0, len(m.Parts))
	for j := range m.Parts {
		p := &m.Parts[j]
		kind, err := partKindFor(i, j, p, chat.RoleUser)
		if err != nil {
			return nil, err
		}
		n := len(blocks)
		switch kind {
		case partText:
			if !isBlank(p.Text) {
				blocks = append(blocks, bedrock.TextBlock(p.Text))
			}
		case partImage:
			img, err := c.media.image(i, j, p)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, bedrock.ContentBlock{Image: img})
		case partDocument:
			doc, err := c.media.document(i, j, p)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, bedrock.ContentBlock{Document: doc})
		}
		blocks = c.partPoint(blocks, n, i, j, p)
	}
	return blocks, nil
}

// toolContent returns the text of a tool message (its text parts joined, else its content)
// and its images.
func (c *conversation) toolContent(i int, m *chat.Message) (string, []bedrock.ToolResultContentBlock, error) {
	if len(m.Parts) == 0 {
		return m.Content, nil, nil
	}
	var text strings.Builder
	var images []bedrock.ToolResultContentBlock
	for j := range m.Parts {
		p := &m.Parts[j]
		kind, err := partKindFor(i, j, p, chat.RoleTool)
		if err != nil {
			return "", nil, err
		}
		if kind == partText {
			text.WriteString(p.Text)
			continue
		}
		img, err := c.media.image(i, j, p)
		if err != nil {
			return "", nil, err
		}
		images = append(images, bedrock.ToolResultContentBlock{Image: img})
	}
	return text.String(), images, nil
}

// attachedText is the text block a user turn with documents and no text block needs, naming
// the documents; ok is false when the turn needs none.
func attachedText(blocks []bedrock.ContentBlock) (text bedrock.ContentBlock, ok bool) {
	var names []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			return text, false
		case b.Document != nil:
			names = append(names, b.Document.Name)
		}
	}
	if len(names) == 0 {
		return text, false
	}
	return bedrock.TextBlock(attachedPrefix + strings.Join(names, ", ")), true
}

// resultContent is the content of a toolResult: a JSON object stays JSON (rule 17: json
// must be an object, so arrays, numbers and strings go as text), anything else is text,
// and an empty result gets a placeholder (rules 4 and 18).
func resultContent(text string, images []bedrock.ToolResultContentBlock) []bedrock.ToolResultContentBlock {
	out := make([]bedrock.ToolResultContentBlock, 0, 1+len(images))
	switch {
	case isBlank(text) && len(images) > 0:
	case isBlank(text):
		out = append(out, bedrock.ToolResultContentBlock{Text: ptr(emptyResultText)})
	default:
		if obj, ok := jsonObject(text); ok {
			out = append(out, bedrock.ToolResultContentBlock{JSON: obj})
		} else {
			out = append(out, bedrock.ToolResultContentBlock{Text: ptr(text)})
		}
	}
	return append(out, images...)
}

// jsonObject returns s compacted when it is one JSON object.
func jsonObject(s string) ([]byte, bool) {
	trimmed := strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(trimmed, "{") || !utf8.ValidString(trimmed) {
		return nil, false
	}
	b, err := compactJSON([]byte(trimmed))
	if err != nil {
		return nil, false
	}
	return b, true
}

// toolInput turns a call's arguments into the toolUse input: "" is {}, anything else must
// be one JSON object. It is validated and compacted, never decoded, so numbers keep every
// digit and strings their exact UTF-8. The error text is completed by the caller's path.
func toolInput(args string) ([]byte, error) {
	if strings.TrimLeft(args, " \t\r\n") == "" {
		return []byte("{}"), nil
	}
	if !utf8.ValidString(args) {
		return nil, fmt.Errorf("is not valid UTF-8")
	}
	b, err := compactJSON([]byte(args))
	if err != nil {
		return nil, errors.New(fault.JSONErrorText(err))
	}
	if b[0] != '{' {
		return nil, fmt.Errorf("must be a JSON object, not %s", jsonKind(b[0]))
	}
	return b, nil
}

// partKind is what a content part holds.
type partKind uint8

const (
	partText partKind = iota
	partImage
	partDocument
	partReasoning
)

// partKindFor checks part j of message i, whose role is role, and tells what it holds. A
// part without type is an image when it has image_url, else text; a refusal is text. Every
// role takes text; user and tool messages also images; user messages also documents;
// assistant messages also refusals (docs/PROTOCOL.md 10.1).
func partKindFor(i, j int, p *chat.Part, role string) (partKind, error) {
	var kind partKind
	switch p.Type {
	case chat.PartText, chat.PartRefusal:
		kind = partText
	case chat.PartImageURL:
		kind = partImage
	case chat.PartFile:
		kind = partDocument
	case chat.PartThinking, chat.PartRedactedThinking:
		kind = partReasoning
	case "":
		if p.Image != nil {
			kind = partImage
		}
	default:
		return 0, unsupportedf("%s.type %s is not supported; parts are \"text\", \"image_url\", \"file\" and, in assistant messages, \"refusal\", \"thinking\" and \"redacted_thinking\"", partPath(i, j), clip.Quote(p.Type))
	}
	switch {
	case (p.Type == chat.PartRefusal || kind == partReasoning) && role != chat.RoleAssistant:
		return 0, invalidf("%s: %s parts are only accepted in assistant messages, not in %s messages", partPath(i, j), p.Type, role)
	case kind == partImage && role != chat.RoleUser && role != chat.RoleTool:
		return 0, invalidf("%s: images are only accepted in user and tool messages, not in %s messages", partPath(i, j), role)
	case kind == partDocument && role != chat.RoleUser:
		return 0, invalidf("%s: documents are only accepted in user messages, not in %s messages", partPath(i, j), role)
	}
	return kind, nil
}

// isBlank reports whether s would be refused as blank text (rule 4): only whitespace or
// control characters.
func isBlank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.IsControl(r) {
			return false
		}
	}
	return true
}
