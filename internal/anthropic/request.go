package anthropic

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
)

// The body of POST /v1/messages and /v1/messages/count_tokens (docs/PROTOCOL.md 15.1),
// as https://docs.anthropic.com/en/api/messages declares it. Top-level members the struct
// does not declare land in Unknown and are listed in x-gateway-dropped, as are declared
// ones accepted without effect (see ignored).
type request struct {
	Model         string             `json:"model"`
	MaxTokens     *chatjson.WholeInt `json:"max_tokens"`
	System        content            `json:"system"`
	Messages      []*message         `json:"messages"`
	Tools         []*tool            `json:"tools"`
	ToolChoice    *toolChoice        `json:"tool_choice"`
	Thinking      *thinking          `json:"thinking"`
	Temperature   *chatjson.Number   `json:"temperature"`
	TopP          *chatjson.Number   `json:"top_p"`
	TopK          *chatjson.WholeInt `json:"top_k"`
	StopSequences chatjson.Stop      `json:"stop_sequences"`
	Metadata      *metadata          `json:"metadata"`
	// OutputFormat is structured output (docs/PROTOCOL.md 13.3), under its beta name or
	// under output_config.
	OutputFormat *outputFormat `json:"output_format"`
	OutputConfig *outputConfig `json:"output_config"`
	Stream       bool          `json:"stream"`
	// Accepted without effect: Bedrock has none of them.
	ServiceTier       jsontext.Value `json:"service_tier"`
	ContextManagement jsontext.Value `json:"context_management"`
	Container         jsontext.Value `json:"container"`
	MCPServers        jsontext.Value `json:"mcp_servers"`
	Unknown           jsontext.Value `json:",embed"`
}

type message struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

// content is a string, or an array of blocks: a message's content, the system prompt, a
// tool_result's content. null is absent.
type content struct {
	text   string
	blocks []*block
}

func (c *content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*c = content{}
	switch k := dec.PeekKind(); k {
	case '"', 'n':
		return json.UnmarshalDecode(dec, &c.text)
	case '[':
		return json.UnmarshalDecode(dec, &c.blocks)
	default:
		return chatjson.WantError("a string or an array of content blocks", k)
	}
}

// block is a content block of any type; each type reads its own members.
type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// image and document
	Source *source `json:"source"`
	Title  string  `json:"title"`
	// tool_use
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input jsontext.Value `json:"input"`
	// tool_result
	ToolUseID string   `json:"tool_use_id"`
	Content   *content `json:"content"`
	IsError   bool     `json:"is_error"`
	// thinking and redacted_thinking
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`

	CacheControl *chatjson.CacheControl `json:"cache_control"`
}

// source is an image's or a document's source.
type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
	FileID    string `json:"file_id"`
}

// tool is a custom tool ({name, description, input_schema}, type absent or "custom") or
// one of Anthropic's server tools ({type: "web_search_20250305", name, …}).
type tool struct {
	Type         string                 `json:"type"`
	Name         string                 `json:"name"`
	Description  string                 `json:"description"`
	InputSchema  chatjson.Parameters    `json:"input_schema"`
	CacheControl *chatjson.CacheControl `json:"cache_control"`
	Strict       bool                   `json:"strict"`
	// DeferLoading asks Anthropic to load the tool only once tool search finds it; Bedrock
	// has no tool search, so the tool is offered as any other.
	DeferLoading bool `json:"defer_loading"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

type thinking struct {
	Type         string             `json:"type"`
	BudgetTokens *chatjson.WholeInt `json:"budget_tokens"`
	// Display (summarized or omitted) has no Converse equivalent.
	Display jsontext.Value `json:"display"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

type outputFormat struct {
	Type   string              `json:"type"`
	Schema chatjson.Parameters `json:"schema"`
}

type outputConfig struct {
	Format *outputFormat  `json:"format"`
	Effort jsontext.Value `json:"effort"`
}

// call is a decoded request: the chat request, whether it streams, and where each chat
// message came from.
type call struct {
	req    *chat.Request
	stream bool
	paths  *paths
}

// Refusals name the field by its dotted Anthropic path (messages.3.content.1.source).

func invalid(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

func unsupported(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue, format, args...)
}

// decodeRequest reads a Messages body into the chat model. count is count_tokens' body,
// where max_tokens is not required. It refuses, naming the field, what Bedrock cannot do
// as asked (a remote image, a server tool the request needs), and lists in req.Ignored
// what it accepts without effect.
func decodeRequest(body []byte, count bool) (*call, error) {
	var r request
	if err := chatjson.Decode(body, &r); err != nil {
		return nil, (&paths{}).rewrite(err) // its indexes, dotted
	}
	if r.MaxTokens == nil && !count {
		return nil, invalid("max_tokens: field required")
	}
	out := &chat.Request{
		Model:       r.Model,
		MaxTokens:   r.MaxTokens.Int32(),
		Temperature: r.Temperature.Float64(),
		TopP:        r.TopP.Float64(),
		TopK:        r.TopK.Int32(),
		Stop:        r.StopSequences,
		// The stream's reasoning comes as thinking deltas.
		StreamReasoning: true,
	}
	if r.Metadata != nil {
		out.User = r.Metadata.UserID
	}
	if t := r.Thinking; t != nil {
		out.Thinking = &chat.Thinking{Type: t.Type, BudgetTokens: t.BudgetTokens.Int32()}
		if e, ok := r.effort(); ok && t.Type == chat.ThinkingAdaptive {
			// Adaptive thinking's depth (Claude Code sends {"effort": "medium"}): the
			// translator sends it where the model takes it. Without adaptive thinking the
			// effort bounds the answer, not thinking, and Bedrock has nothing for it.
			out.ReasoningEffort = e
		}
	}
	p := &paths{format: "output_format"}
	f := r.OutputFormat
	if f == nil && r.OutputConfig != nil {
		f, p.format = r.OutputConfig.Format, "output_config.format"
	}
	if f != nil {
		if f.Type != chat.FormatJSONSchema {
			return nil, unsupported(`%s.type %s is not supported; the only type is "json_schema"`, p.format, clip.Quote(f.Type))
		}
		out.ResponseFormat = &chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: f.Schema}
	}
	if err := system(systemLoc, &r.System, out, p); err != nil {
		return nil, err
	}
	for i, m := range r.Messages {
		if err := messageOf(i, m, out, p); err != nil {
			return nil, err
		}
	}
	dropped, err := tools(&r, out, p)
	if err != nil {
		return nil, err
	}
	out.Ignored = append(dropped, r.ignored()...)
	return &call{req: out, stream: r.Stream && !count, paths: p}, nil
}

// system adds a system prompt as a chat system message: the top-level one (at systemLoc),
// or a message of role system (Claude Code's per-turn context, after the first user
// message), which the translator moves into Bedrock's system prompt as it does OpenAI's
// system messages. A string, or text blocks.
func system(at loc, s *content, out *chat.Request, p *paths) error {
	if len(s.blocks) == 0 {
		if s.text != "" {
			out.Messages = append(out.Messages, chat.Message{Role: chat.RoleSystem, Content: s.text})
			p.msgs = append(p.msgs, origin{at: at})
		}
		return nil
	}
	m := chat.Message{Role: chat.RoleSystem, Parts: make([]chat.Part, len(s.blocks))}
	o := origin{at: at, parts: span{len(p.parts), len(p.parts) + len(s.blocks)}}
	for j, b := range s.blocks {
		at := loc{msg: at.msg, block: j, inner: -1}
		switch {
		case b == nil:
			return nullBlock(at)
		case b.Type != "text":
			return unsupported("%s.type %s is not supported; system blocks are text", at, clip.Quote(b.Type))
		}
		m.Parts[j] = chat.Part{Type: chat.PartText, Text: b.Text, CacheControl: cacheControl(b.CacheControl)}
		p.parts = append(p.parts, at)
	}
	out.Messages = append(out.Messages, m)
	p.msgs = append(p.msgs, o)
	return nil
}

// messageOf adds message i to out: an assistant message as one chat message; a user
// message as one tool message per tool_result block, in order, then one user message with
// the rest of its blocks, if any.
func messageOf(i int, m *message, out *chat.Request, p *paths) error {
	at := loc{msg: i, block: -1, inner: -1}
	switch {
	case m == nil:
		return nullBlock(at)
	case m.Role == "":
		return invalid("%s.role: field required", at)
	case m.Role == chat.RoleSystem:
		return system(at, &m.Content, out, p)
	case m.Role != chat.RoleUser && m.Role != chat.RoleAssistant:
		return invalid(`%s.role %s is not one of "user", "assistant", "system"`, at, clip.Quote(m.Role))
	}
	if len(m.Content.blocks) == 0 { // a string, or no blocks: the translator judges an empty message
		out.Messages = append(out.Messages, chat.Message{Role: m.Role, Content: m.Content.text})
		p.msgs = append(p.msgs, origin{at: at})
		return nil
	}
	if m.Role == chat.RoleAssistant {
		return assistant(at, m.Content.blocks, out, p)
	}
	// The tool results first, then the rest, so that each chat message's parts are
	// contiguous in p.parts.
	for j, b := range m.Content.blocks {
		if b != nil && b.Type == "tool_result" {
			if err := toolResult(loc{msg: i, block: j, inner: -1}, b, out, p); err != nil {
				return err
			}
		}
	}
	var rest chat.Message
	o := origin{at: at, parts: span{len(p.parts), len(p.parts)}}
	for j, b := range m.Content.blocks {
		bat := loc{msg: i, block: j, inner: -1}
		if b == nil {
			return nullBlock(bat)
		}
		if b.Type == "tool_result" {
			continue
		}
		part, err := userPart(bat, b)
		if err != nil {
			return err
		}
		rest.Parts = append(rest.Parts, part)
		p.parts = append(p.parts, bat)
	}
	if len(rest.Parts) > 0 {
		rest.Role = chat.RoleUser
		o.parts.end = len(p.parts)
		out.Messages = append(out.Messages, rest)
		p.msgs = append(p.msgs, o)
	}
	return nil
}

// userPart is a user message's text, image or document block as a chat part.
func userPart(at loc, b *block) (chat.Part, error) {
	part := chat.Part{CacheControl: cacheControl(b.CacheControl)}
	switch b.Type {
	case "text":
		part.Type, part.Text = chat.PartText, b.Text
	case "image":
		url, err := imageURL(at, b.Source)
		if err != nil {
			return part, err
		}
		part.Type, part.Image = chat.PartImageURL, &chat.ImageURL{URL: url}
	case "document":
		f, err := document(at, b)
		if err != nil {
			return part, err
		}
		part.Type, part.File = chat.PartFile, f
	case "tool_use", "thinking", "redacted_thinking":
		return part, invalid("%s.type %s is an assistant's block; a user message takes text, image, document and tool_result", at, clip.Quote(b.Type))
	case "":
		return part, invalid("%s.type: field required", at)
	default:
		return part, unsupported(`%s.type %s is not supported; a user message takes "text", "image", "document" and "tool_result"`, at, clip.Quote(b.Type))
	}
	return part, nil
}

// imageURL is an image block's source as a data URL. The gateway fetches nothing on a
// client's behalf, and stores no files.
func imageURL(at loc, s *source) (string, error) {
	if s == nil {
		return "", invalid("%s.source: field required", at)
	}
	switch s.Type {
	case "base64":
		return "data:" + s.MediaType + ";base64," + s.Data, nil
	case "url":
		return "", unsupported("%s.source: url sources are not fetched; send the image inline as a base64 source", at)
	case "file":
		return "", unsupported("%s.source: file sources are not supported: the gateway stores no files; send the image as a base64 source", at)
	}
	return "", invalid(`%s.source.type %s is not one of "base64", "url", "file"`, at, clip.Quote(s.Type))
}

// document is a document block's source as a chat file: a base64 PDF, or plain text
// (sent as a text/plain document).
func document(at loc, b *block) (*chat.File, error) {
	s := b.Source
	if s == nil {
		return nil, invalid("%s.source: field required", at)
	}
	switch s.Type {
	case "base64":
		return &chat.File{Data: "data:" + s.MediaType + ";base64," + s.Data, Filename: b.Title}, nil
	case "text":
		return &chat.File{Data: "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(s.Data)), Filename: b.Title}, nil
	case "url":
		return nil, unsupported("%s.source: url sources are not fetched; send the document inline as a base64 or text source", at)
	case "file":
		return nil, unsupported("%s.source: file sources are not supported: the gateway stores no files; send the document as a base64 or text source", at)
	case "content":
		return nil, unsupported("%s.source: content sources are not supported; send the document as a base64 or text source", at)
	}
	return nil, invalid(`%s.source.type %s is not one of "base64", "text", "url", "file", "content"`, at, clip.Quote(s.Type))
}

// toolResult adds a tool_result block as a tool message.
func toolResult(at loc, b *block, out *chat.Request, p *paths) error {
	m := chat.Message{Role: chat.RoleTool, ToolCallID: b.ToolUseID, ToolError: b.IsError, CacheControl: cacheControl(b.CacheControl)}
	o := origin{at: at, parts: span{len(p.parts), len(p.parts)}}
	if c := b.Content; c != nil && len(c.blocks) > 0 {
		for k, cb := range c.blocks {
			cat := loc{msg: at.msg, block: at.block, inner: k}
			if cb == nil {
				return nullBlock(cat)
			}
			part := chat.Part{CacheControl: cacheControl(cb.CacheControl)}
			switch cb.Type {
			case "text":
				part.Type, part.Text = chat.PartText, cb.Text
			case "image":
				url, err := imageURL(cat, cb.Source)
				if err != nil {
					return err
				}
				part.Type, part.Image = chat.PartImageURL, &chat.ImageURL{URL: url}
			default:
				return unsupported(`%s.type %s is not supported in a tool_result; send "text" or "image"`, cat, clip.Quote(cb.Type))
			}
			m.Parts = append(m.Parts, part)
			p.parts = append(p.parts, cat)
		}
		o.parts.end = len(p.parts)
	} else if c != nil {
		m.Content = c.text
	}
	out.Messages = append(out.Messages, m)
	p.msgs = append(p.msgs, o)
	return nil
}

// assistant adds an assistant message: its thinking blocks as reasoning, kept byte for
// byte, its text as parts and its tool_use blocks as tool calls.
func assistant(at loc, blocks []*block, out *chat.Request, p *paths) error {
	m := chat.Message{Role: chat.RoleAssistant}
	o := origin{at: at, parts: span{len(p.parts), len(p.parts)}, calls: span{len(p.calls), len(p.calls)}}
	for j, b := range blocks {
		bat := loc{msg: at.msg, block: j, inner: -1}
		if b == nil {
			return nullBlock(bat)
		}
		switch b.Type {
		case "thinking":
			m.Reasoning = append(m.Reasoning, chat.ReasoningBlock{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			m.Reasoning = append(m.Reasoning, chat.ReasoningBlock{Redacted: true, Data: b.Data})
		case "tool_use":
			args, err := input(bat, b.Input)
			if err != nil {
				return err
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: b.ID, Type: "function", Name: b.Name, Arguments: args})
			p.calls = append(p.calls, bat)
			if b.CacheControl != nil {
				m.CacheControl = cacheControl(b.CacheControl) // a point after the message's last call
			}
		case "text", "image", "document":
			part, err := userPart(bat, b)
			if err != nil {
				return err
			}
			m.Parts = append(m.Parts, part)
			p.parts = append(p.parts, bat)
		case "tool_result":
			return invalid("%s.type \"tool_result\" is a user's block; tool results go in the user message after the tool_use", bat)
		case "":
			return invalid("%s.type: field required", bat)
		default:
			return unsupported(`%s.type %s is not supported; an assistant message takes "text", "thinking", "redacted_thinking" and "tool_use"`, bat, clip.Quote(b.Type))
		}
	}
	o.parts.end, o.calls.end = len(p.parts), len(p.calls)
	out.Messages = append(out.Messages, m)
	p.msgs = append(p.msgs, o)
	return nil
}

// input is a tool_use block's input, an object, as its JSON text as written.
func input(at loc, v jsontext.Value) (string, error) {
	switch v.Kind() {
	case '{':
		return string(bytes.ToValidUTF8(v, []byte("\uFFFD"))), nil
	case 0, 'n':
		return "{}", nil
	}
	return "", invalid("%s.input: want an object, got %s", at, chatjson.KindName(v.Kind()))
}

// serverTool says a tool is one of Anthropic's server tools (web search, code execution,
// web fetch, tool search, bash, text editor, computer use): a type other than "custom".
func (t *tool) serverTool() bool { return t.Type != "" && t.Type != "custom" }

// tools sets out's tools and tool choice. Server tools are dropped (Bedrock cannot run
// them) and returned as ignored paths, unless the tool choice needs one: then the request
// is refused naming it.
func tools(r *request, out *chat.Request, p *paths) ([]string, error) {
	var dropped []string
	var server []string // "tools.N (type)", for a refusal
	for i, t := range r.Tools {
		at := toolLoc(i)
		if t == nil {
			return nil, nullBlock(at)
		}
		if t.serverTool() {
			dropped = append(dropped, at.String())
			server = append(server, at.String()+" ("+clip.String(t.Type, clip.QuoteMax)+")")
			if c := r.ToolChoice; c != nil && c.Type == "tool" && c.Name == t.Name {
				return nil, unsupported("tool_choice.name %s is the server tool %s (%s), which Bedrock cannot run", clip.Quote(c.Name), at, clip.Quote(t.Type))
			}
			continue
		}
		if t.DeferLoading {
			dropped = append(dropped, at.String()+".defer_loading")
		}
		out.Tools = append(out.Tools, chat.Tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
			CacheControl: cacheControl(t.CacheControl), Strict: t.Strict})
		p.tools = append(p.tools, i)
	}
	c := r.ToolChoice
	if c == nil {
		return dropped, nil
	}
	switch c.Type {
	case "auto":
		out.ToolChoice.Mode = chat.ChoiceAuto
	case "any":
		out.ToolChoice.Mode = chat.ChoiceRequired
	case "tool":
		if c.Name == "" {
			return nil, invalid(`tool_choice.name: field required when tool_choice.type is "tool"`)
		}
		out.ToolChoice = chat.ToolChoice{Mode: chat.ChoiceFunction, Function: c.Name}
	case "none":
		out.ToolChoice.Mode = chat.ChoiceNone
	case "":
		return nil, invalid("tool_choice.type: field required")
	default:
		return nil, invalid(`tool_choice.type %s is not one of "auto", "any", "tool", "none"`, clip.Quote(c.Type))
	}
	if c.Type == "any" && len(out.Tools) == 0 && len(server) > 0 {
		return nil, unsupported(`tool_choice.type "any" leaves the model nothing to call: %s are server tools, which Bedrock cannot run`, strings.Join(server, ", "))
	}
	if c.DisableParallelToolUse {
		no := false
		out.ParallelToolCalls = &no
	}
	return dropped, nil
}

// effort is output_config.effort when it is a string and thinking was asked for.
func (r *request) effort() (string, bool) {
	if r.Thinking == nil || r.OutputConfig == nil || r.OutputConfig.Effort.Kind() != '"' {
		return "", false
	}
	var e string
	if json.Unmarshal(r.OutputConfig.Effort, &e) != nil {
		return "", false
	}
	return e, true
}

// ignored lists the top-level members accepted without effect, then every undeclared
// member that is not null, at most httpx.MaxIgnored in all, read as leniently as the body.
func (r *request) ignored() []string {
	var out []string
	given := func(v jsontext.Value) bool { return len(v) > 0 && v.Kind() != 'n' }
	if r.Thinking != nil && given(r.Thinking.Display) {
		out = append(out, "thinking.display")
	}
	if _, used := r.effort(); r.OutputConfig != nil && given(r.OutputConfig.Effort) && !(used && r.Thinking.Type == chat.ThinkingAdaptive) {
		out = append(out, "output_config.effort")
	}
	for _, m := range []struct {
		name string
		v    jsontext.Value
	}{{"service_tier", r.ServiceTier}, {"context_management", r.ContextManagement}, {"container", r.Container}, {"mcp_servers", r.MCPServers}} {
		if given(m.v) {
			out = append(out, m.name)
		}
	}
	return chatjson.UnknownMembers(out, r.Unknown, httpx.MaxIgnored)
}

func cacheControl(c *chatjson.CacheControl) *chat.CacheControl {
	if c == nil {
		return nil
	}
	return &chat.CacheControl{Type: c.Type, TTL: c.TTL}
}

// nullBlock refuses a null where a message, block or tool goes.
func nullBlock(at fmt.Stringer) error {
	return fault.Refuse(fault.ErrInvalidBody, fault.ReasonInvalidValue, "%s: want an object, got null", at)
}
