package bedrocksim

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// answer is what the simulated model says: its reasoning blocks, a text block, then tool calls.
type answer struct {
	Reasoning  []reasoningContentBlock
	Text       string
	Calls      []toolCall
	StopReason string
}

// toolCall is one toolUse block of an answer.
type toolCall struct {
	ID    string
	Name  string
	Input jsontext.Value // a compact JSON object
}

func (a answer) message() message {
	m := message{Role: roleAssistant}
	for _, r := range a.Reasoning {
		m.Content = append(m.Content, contentBlock{ReasoningContent: &r})
	}
	if a.Text != "" {
		m.Content = append(m.Content, contentBlock{Text: &a.Text})
	}
	for _, c := range a.Calls {
		m.Content = append(m.Content, contentBlock{ToolUse: &toolUseBlock{ToolUseID: c.ID, Name: c.Name, Input: c.Input}})
	}
	return m
}

// outputChars is the size of the answer, reasoning included, for token counts.
func (a answer) outputChars() int {
	n := len(a.Text)
	for _, r := range a.Reasoning {
		if r.ReasoningText != nil {
			n += len(r.ReasoningText.Text)
		}
		n += len(r.RedactedContent)
	}
	for _, c := range a.Calls {
		n += len(c.Input)
	}
	return n
}

// tokens estimates a token count the usual way: four bytes a token, at least one.
func tokens(n int) int32 { return int32(max(1, n/4)) }

// usageFor counts a request body's tokens as input and the answer's as output.
func usageFor(body []byte, a answer) tokenUsage {
	in, out := tokens(len(body)), tokens(a.outputChars())
	return tokenUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// buildAnswer is the deterministic model (docs/PROTOCOL.md section 9), applied to a request that
// passed validation. It looks at the last user turn: tool results are quoted back in text;
// otherwise tools named there (or forced by toolChoice) are called with arguments built from
// their schemas; otherwise the answer is a short text. body seeds the tool-call ids, so the
// same request always gets the same answer. With Claude's disable_parallel_tool_use
// (docs/BEDROCK.md J1) the named tools are called one per answer instead (oneAtATime). With
// structured output (docs/BEDROCK.md I) a text answer is JSON built from the schema
// (structured). With thinking on, the answer starts with reasoning in m's form
// (reasoningBlocks).
func buildAnswer(m ModelInfo, req *converseRequest, body []byte) answer {
	tc := forcedBy(req.ToolConfig, req.anthropicChoice)
	var a answer
	if ch := req.anthropicChoice; ch != nil && ch.DisableParallel {
		a = oneAtATime(req.Messages, tc, body)
	} else {
		a = parallel(req.Messages, tc, body)
	}
	if req.format != nil {
		a = structured(a, req.format)
	}

	// The reasoning says what the whole answer does, though a small maxTokens cuts it below;
	// the cut counts only the text and the calls.
	reasoning := reasoningBlocks(m, req, a)

	// A maxTokens below the answer's size cuts it, as a real model stops mid-sentence.
	if ic := req.InferenceConfig; ic != nil && ic.MaxTokens != nil && *ic.MaxTokens < tokens(a.outputChars()) {
		limit := max(1, int(*ic.MaxTokens)) * 4
		text := a.Text
		if len(text) > limit {
			text = text[:limit]
			for !utf8.ValidString(text) {
				text = text[:len(text)-1]
			}
		}
		a = answer{Text: text, StopReason: stopMaxTokens}
	}
	a.Reasoning = reasoning
	return a
}

// reasoningBlocks are the reasoning an answer starts with when the request turned thinking on
// (docs/BEDROCK.md G4, G6): for Claude one thinking block saying what the answer does, signed
// (sign.go), with empty text on adaptive-only models (Opus 4.7), and a redacted block after
// it when the last user turn has the word "redact" (the redacted_thinking fault: one redacted
// block instead); for Nova 2 the text "[REDACTED]"; for
// gpt-oss and DeepSeek the text, unsigned.
func reasoningBlocks(m ModelInfo, req *converseRequest, a answer) []reasoningContentBlock {
	th := req.thinking
	if !th.On {
		return nil
	}
	text := thought(req.Messages, a)
	if !th.Claude {
		if m.Reasoning == ReasoningNova {
			text = "[REDACTED]"
		}
		return []reasoningContentBlock{{ReasoningText: &reasoningTextBlock{Text: text}}}
	}
	tag := conversationTag(req.Messages)
	shown := text
	if m.Reasoning == ReasoningAdaptiveOnly {
		shown = ""
	}
	if req.redactThinking { // the redacted_thinking fault
		return []reasoningContentBlock{{RedactedContent: redactedData(m.ID, tag, text)}}
	}
	blocks := []reasoningContentBlock{{ReasoningText: &reasoningTextBlock{Text: shown, Signature: signThinking(m.ID, tag, shown)}}}
	if last := lastUser(req.Messages); last >= 0 {
		if userText, _ := turnParts(req.Messages[last]); mentions(strings.ToLower(userText), "redact") {
			blocks = append(blocks, reasoningContentBlock{RedactedContent: redactedData(m.ID, tag, text)})
		}
	}
	return blocks
}

// thought is the reasoning text of answer a: what the user asked (or that tool results came
// back) and what the model does about it.
func thought(msgs []message, a answer) string {
	var userText string
	var results []*toolResultBlock
	if last := lastUser(msgs); last >= 0 {
		userText, results = turnParts(msgs[last])
	}
	var b strings.Builder
	switch said := strings.TrimSpace(userText); {
	case len(results) > 0:
		b.WriteString("The tool results are in")
	case said == "":
		b.WriteString("The user sent no text")
	default:
		b.WriteString(`The user asks "` + truncateRunes(said, 80) + `"`)
	}
	b.WriteString("; I will ")
	switch {
	case len(a.Calls) > 0:
		names := make([]string, len(a.Calls))
		for i, c := range a.Calls {
			names[i] = c.Name
		}
		b.WriteString("call " + joinAnd(names))
	case len(results) > 0:
		b.WriteString("answer from the tool results")
	default:
		b.WriteString("answer in text")
	}
	b.WriteString(".")
	return b.String()
}

// parallel answers the last user turn on its own: its tool results quoted (unless a tool
// failed and is called again: retries), else every tool named in it called at once, else a
// greeting.
func parallel(msgs []message, tc *toolConfiguration, body []byte) answer {
	lastIndex := lastUser(msgs)
	var userText string
	var results []*toolResultBlock
	if lastIndex >= 0 {
		userText, results = turnParts(msgs[lastIndex])
	}
	if len(results) > 0 {
		var names map[string]string
		if lastIndex > 0 {
			names = toolNames(msgs[lastIndex-1 : lastIndex])
		}
		if again := retries(msgs, results, names, tc); len(again) > 0 {
			var taskText string
			if task := taskIndex(msgs); task >= 0 {
				taskText, _ = turnParts(msgs[task])
			}
			return callTools(again, body, " again", quoted(taskText))
		}
		return answer{Text: quoteResults(results, names), StopReason: stopEndTurn}
	}
	if specs := chosenTools(tc, userText); len(specs) > 0 {
		return callTools(specs, body, "", quoted(userText))
	}
	return greeting(userText)
}

// retries are the tools a tool-result turn has the model call again, each once, in the order
// of results (names maps their ids to tools): those whose result is an error that retryable
// takes, among the tools of tc (only the forced one under toolChoice.tool).
func retries(msgs []message, results []*toolResultBlock, names map[string]string, tc *toolConfiguration) []*toolSpecification {
	calls := callsSinceTask(msgs)
	var again []*toolSpecification
	for _, r := range results {
		name := names[r.ToolUseID]
		if !retryable(r, name, calls[name]) {
			continue
		}
		if tc != nil && tc.ToolChoice != nil && tc.ToolChoice.Tool != nil && tc.ToolChoice.Tool.Name != name {
			continue
		}
		if s := toolSpec(tc, name); s != nil && !slices.Contains(again, s) {
			again = append(again, s)
		}
	}
	return again
}

// retryable reports whether the model calls tool name again after its result r, the tool
// having been called calls times since the task: r is an error, and either this was the
// tool's only call (a model retries a failed tool once), or r asks for another call, as the
// gateway's repair turn does ("Call save_policy again with corrected arguments.", "Repeat
// this call if it is still needed.": docs/PROTOCOL.md 13.2), which the model always obeys.
func retryable(r *toolResultBlock, name string, calls int) bool {
	if r == nil || r.Status != statusError || name == "" {
		return false
	}
	return calls == 1 || asksAgain(r, name)
}

// asksAgain reports whether a result's text asks for the call to be made again.
func asksAgain(r *toolResultBlock, name string) bool {
	for _, c := range r.Content {
		if c.Text == nil {
			continue
		}
		text := strings.ToLower(*c.Text)
		if strings.Contains(text, "call "+strings.ToLower(name)+" again") || strings.Contains(text, "repeat this call") {
			return true
		}
	}
	return false
}

// taskIndex is the index of the task: the last user turn with text and no tool results; -1
// when there is none.
func taskIndex(msgs []message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != roleUser {
			continue
		}
		if text, results := turnParts(msgs[i]); len(results) == 0 && text != "" {
			return i
		}
	}
	return -1
}

// callsSinceTask counts the calls of each tool after the task.
func callsSinceTask(msgs []message) map[string]int {
	calls := map[string]int{}
	for _, name := range toolNames(msgs[taskIndex(msgs)+1:]) {
		calls[name]++
	}
	return calls
}

// toolSpec is the tool of tc called name, or nil.
func toolSpec(tc *toolConfiguration, name string) *toolSpecification {
	if tc == nil {
		return nil
	}
	for _, t := range tc.Tools {
		if t.ToolSpec != nil && t.ToolSpec.Name == name {
			return t.ToolSpec
		}
	}
	return nil
}

// oneAtATime is the model under disable_parallel_tool_use (docs/PROTOCOL.md section 9): the
// task is the last user turn with text and no tool results, its named tools are called one
// per answer in the order the task first mentions them, a tool whose latest result is an error
// is called again when retryable says so, and when no call is left the answer quotes every
// result since the task. So a loop of one call per turn ends with the text a parallel call
// ends with.
func oneAtATime(msgs []message, tc *toolConfiguration, body []byte) answer {
	task := taskIndex(msgs)
	var taskText string
	if task >= 0 {
		taskText, _ = turnParts(msgs[task])
	}
	since := msgs[task+1:]
	names := toolNames(since)
	calls := callsSinceTask(msgs)
	latest := map[string]*toolResultBlock{}
	var results []*toolResultBlock
	for _, m := range since {
		if m.Role != roleUser {
			continue
		}
		_, rs := turnParts(m)
		for _, r := range rs {
			latest[names[r.ToolUseID]] = r
		}
		results = append(results, rs...)
	}

	// In the order the task first mentions them (a forced tool, not mentioned, is alone).
	named := chosenTools(tc, taskText)
	slices.SortStableFunc(named, func(a, b *toolSpecification) int {
		return mentionAt(taskText, a.Name) - mentionAt(taskText, b.Name)
	})
	for _, s := range named {
		if retryable(latest[s.Name], s.Name, calls[s.Name]) {
			return callTools([]*toolSpecification{s}, body, " again", quoted(taskText))
		}
	}
	for _, s := range named {
		if calls[s.Name] == 0 {
			return callTools([]*toolSpecification{s}, body, "", quoted(taskText))
		}
	}
	if len(results) > 0 {
		return answer{Text: quoteResults(results, names), StopReason: stopEndTurn}
	}
	return greeting(taskText)
}

// lastUser is the index of the last user turn, or -1.
func lastUser(msgs []message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == roleUser {
			return i
		}
	}
	return -1
}

// turnParts are a turn's text blocks joined by newlines, and its tool results. The text is
// what the user said: tagged elements (`<system-reminder>…</system-reminder>`) that end a
// block, or make all of it, are context that a client adds to the turn (Claude Code's
// reminders name most of its tools), so they are left out (withoutContext), unless that
// leaves no text at all.
func turnParts(m message) (text string, results []*toolResultBlock) {
	var texts, context []string
	for _, b := range m.Content {
		if b.Text != nil {
			if said := withoutContext(*b.Text); said != "" {
				texts = append(texts, said)
			} else {
				context = append(context, *b.Text)
			}
		}
		if b.ToolResult != nil {
			results = append(results, b.ToolResult)
		}
	}
	if len(texts) == 0 {
		texts = context
	}
	return strings.Join(texts, "\n"), results
}

// withoutContext is text, trimmed, without the tagged elements <name>…</name> that end it,
// each starting a line; "" when that is all of it.
func withoutContext(text string) string {
	t := strings.TrimSpace(text)
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '<' && (i == 0 || t[i-1] == '\n') && tagged(t[i:]) {
			t = strings.TrimSpace(t[:i])
			i = len(t)
		}
	}
	return t
}

// maxTagName bounds the name of a tagged element that withoutContext looks for.
const maxTagName = 64

// tagged reports whether t is one element <name>…</name>.
func tagged(t string) bool {
	rest, ok := strings.CutPrefix(t, "<")
	if !ok {
		return false
	}
	end := strings.IndexByte(rest[:min(len(rest), maxTagName+1)], '>')
	if end <= 0 {
		return false
	}
	name := rest[:end]
	for i := range len(name) {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return len(t) >= 2*len(name)+5 && strings.HasSuffix(t, "</"+name+">")
}

// quoted is the first `backquoted` text of the user's words, trimmed, or "": what a call of a
// tool they name should take (`ls -la`, `notes.txt`).
func quoted(text string) string {
	_, rest, ok := strings.Cut(text, "`")
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, "`")
	q, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return strings.TrimSpace(q)
}

// toolNames maps the toolUse ids of the assistant turns among msgs to the tools called.
func toolNames(msgs []message) map[string]string {
	names := map[string]string{}
	for _, m := range msgs {
		if m.Role != roleAssistant {
			continue
		}
		for _, b := range m.Content {
			if b.ToolUse != nil {
				names[b.ToolUse.ToolUseID] = b.ToolUse.Name
			}
		}
	}
	return names
}

// callTools calls specs, after the text "I'll call a and b<suffix>.", with arguments built
// from their schemas: by quotedArgs when the task quotes a value (quote), else exampleArgs.
func callTools(specs []*toolSpecification, body []byte, suffix, quote string) answer {
	a := answer{StopReason: stopToolUse}
	names := make([]string, len(specs))
	for i, spec := range specs {
		names[i] = spec.Name
		args := exampleArgs(spec.InputSchema.JSON)
		if quote != "" {
			args = quotedArgs(spec.InputSchema.JSON, quote)
		}
		a.Calls = append(a.Calls, toolCall{ID: toolUseID(body, i), Name: spec.Name, Input: args})
	}
	a.Text = "I'll call " + joinAnd(names) + suffix + "."
	return a
}

// greeting is the answer with no tool to call and no result to quote.
func greeting(userText string) answer {
	a := answer{Text: "Hello from the Bedrock simulator.", StopReason: stopEndTurn}
	if said := strings.TrimSpace(userText); said != "" {
		a.Text += " You said: " + truncateRunes(said, 200)
	}
	return a
}

// chosenTools are the tools the simulated model calls, in the order of the tools list.
// Validation has refused a toolConfig the model cannot take.
func chosenTools(tc *toolConfiguration, userText string) []*toolSpecification {
	if tc == nil {
		return nil
	}
	var specs []*toolSpecification
	for _, t := range tc.Tools {
		if t.ToolSpec != nil {
			specs = append(specs, t.ToolSpec)
		}
	}
	if len(specs) == 0 {
		return nil
	}
	if ch := tc.ToolChoice; ch != nil && ch.Tool != nil {
		for _, s := range specs {
			if s.Name == ch.Tool.Name {
				return []*toolSpecification{s}
			}
		}
		return nil
	}
	var named []*toolSpecification
	for _, s := range specs {
		if mentions(userText, s.Name) {
			named = append(named, s)
		}
	}
	if len(named) == 0 && tc.ToolChoice != nil && tc.ToolChoice.Any != nil {
		return specs[:1]
	}
	return named
}

// mentions reports whether text holds name as a whole word. Tool names are made of
// [a-zA-Z0-9_-], so those are the word characters: "get" is not mentioned by "get_weather".
func mentions(text, name string) bool { return mentionAt(text, name) >= 0 }

// mentionAt is the byte offset of the first whole-word mention of name in text, or -1.
func mentionAt(text, name string) int {
	if name == "" {
		return -1
	}
	for from := 0; ; {
		i := strings.Index(text[from:], name)
		if i < 0 {
			return -1
		}
		start, end := from+i, from+i+len(name)
		if (start == 0 || !isNameByte(text[start-1])) && (end == len(text) || !isNameByte(text[end])) {
			return start
		}
		from = start + 1
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// quoteResults renders tool results as "Tool results received: name → content; …", names
// mapping toolUse ids to tool names (an id without a name stands for itself). Tagged
// elements that end a result's text are context a client added (turnParts), left out unless
// that leaves nothing.
func quoteResults(results []*toolResultBlock, names map[string]string) string {
	parts := make([]string, 0, len(results))
	for _, r := range results {
		name := names[r.ToolUseID]
		if name == "" {
			name = r.ToolUseID
		}
		var content, context []string
		for _, c := range r.Content {
			switch {
			case c.Text != nil && withoutContext(*c.Text) == "":
				context = append(context, *c.Text)
			case c.Text != nil:
				content = append(content, withoutContext(*c.Text))
			case c.JSON != nil:
				// Compacted, not decoded: the result's digits come back as the client wrote them.
				v := slices.Clone(c.JSON)
				if v.Compact() == nil {
					content = append(content, string(v))
				}
			case c.Image != nil:
				content = append(content, "[image]")
			}
		}
		if len(content) == 0 {
			content = context
		}
		part := name + " → " + strings.Join(content, " ")
		if len(content) == 0 {
			part = name + " → (empty)"
		}
		if r.Status == statusError {
			part += " (error)"
		}
		parts = append(parts, part)
	}
	return "Tool results received: " + strings.Join(parts, "; ")
}

// idAlphabet is what Bedrock's tool-call ids are made of after "tooluse_".
const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// toolUseID is a Bedrock-shaped id ("tooluse_" and 22 alphanumerics) derived from the
// request body and the call's index, so ids are deterministic yet differ between calls.
func toolUseID(body []byte, index int) string {
	h := sha256.New()
	h.Write(body)
	_ = binary.Write(h, binary.BigEndian, int64(index))
	sum := h.Sum(nil)
	id := make([]byte, 22)
	for i := range id {
		id[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return "tooluse_" + string(id)
}

func joinAnd(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
