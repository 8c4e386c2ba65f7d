package responses

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
)

// The body of POST /v1/responses (docs/PROTOCOL.md 16), as openai-go's ResponseNewParams
// writes it. Top-level members the struct does not declare land in Unknown and are listed
// in x-gateway-ignored-params, with the declared ones accepted without effect (ignored).
type request struct {
	Model              string             `json:"model"`
	Input              input              `json:"input"`
	Instructions       *string            `json:"instructions"`
	PreviousResponseID string             `json:"previous_response_id"`
	Tools              []*tool            `json:"tools"`
	ToolChoice         jsontext.Value     `json:"tool_choice"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls"`
	MaxToolCalls       *chatjson.WholeInt `json:"max_tool_calls"`
	MaxOutputTokens    *chatjson.WholeInt `json:"max_output_tokens"`
	Temperature        *chatjson.Number   `json:"temperature"`
	TopP               *chatjson.Number   `json:"top_p"`
	Reasoning          *reasoning         `json:"reasoning"`
	Text               *textConfig        `json:"text"`
	Stream             bool               `json:"stream"`
	StreamOptions      jsontext.Value     `json:"stream_options"`
	Store              *bool              `json:"store"`
	Background         *bool              `json:"background"`
	PromptCacheKey     string             `json:"prompt_cache_key"`
	// PromptCacheRetention "24h" asks automatic cache points for the 1h TTL (12.2).
	PromptCacheRetention string         `json:"prompt_cache_retention"`
	User                 string         `json:"user"`
	SafetyIdentifier     string         `json:"safety_identifier"`
	ServiceTier          string         `json:"service_tier"`
	Metadata             jsontext.Value `json:"metadata"`
	Include              []string       `json:"include"`
	ClientMetadata       jsontext.Value `json:"client_metadata"`
	Truncation           string         `json:"truncation"`
	Unknown              jsontext.Value `json:",embed"`
}

type reasoning struct {
	Effort  string `json:"effort"`
	Summary string `json:"summary"`
	// GenerateSummary is summary's deprecated name.
	GenerateSummary string `json:"generate_summary"`
}

type textConfig struct {
	Format    *textFormat `json:"format"`
	Verbosity string      `json:"verbosity"`
}

// textFormat is text.format: {type: text | json_object}, or {type: json_schema, name,
// description, schema, strict} (flat, where Chat Completions nests json_schema).
type textFormat struct {
	Type        string              `json:"type"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Schema      chatjson.Parameters `json:"schema"`
	Strict      bool                `json:"strict"`
}

// input is a string (one user message) or a list of items.
type input struct {
	text  *string
	items []*item
}

func (in *input) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*in = input{}
	switch k := dec.PeekKind(); k {
	case '"':
		in.text = new(string)
		return json.UnmarshalDecode(dec, in.text)
	case 'n', '[':
		return json.UnmarshalDecode(dec, &in.items)
	default:
		return chatjson.WantError("a string or an array of items", k)
	}
}

// item is one input item, of any type: the members of each type are read into one struct
// and checked by type (items).
type item struct {
	Type    string  `json:"type"`
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Content content `json:"content"`
	// function_call, custom_tool_call and their outputs.
	CallID    string             `json:"call_id"`
	Name      string             `json:"name"`
	Namespace string             `json:"namespace"`
	Arguments chatjson.Arguments `json:"arguments"`
	Input     string             `json:"input"`
	Output    content            `json:"output"`
	// reasoning.
	EncryptedContent *string `json:"encrypted_content"`
	// additional_tools: tools of the request; tool_search_output: the tools the search
	// loaded, also its result.
	Tools toolList `json:"tools"`
}

// toolList is a list of tools and its text as sent, which is a tool_search_output's
// result.
type toolList struct {
	tools []*tool
	raw   jsontext.Value
}

func (l *toolList) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	at := dec.StackPointer()
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*l = toolList{raw: raw.Clone()}
	err = json.Unmarshal(raw, &l.tools, chatjson.Lenient)
	if se := (*json.SemanticError)(nil); errors.As(err, &se) {
		se.JSONPointer = at + se.JSONPointer // read apart, so its place in the body is added
	}
	return err
}

// A member that appears twice keeps its last value whole: json/v2 would merge a repeated
// object into the first, so these objects start again from zero.

func (it *item) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain item
	*it = item{}
	return json.UnmarshalDecode(dec, (*plain)(it))
}

func (p *part) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain part
	*p = part{}
	return json.UnmarshalDecode(dec, (*plain)(p))
}

func (t *tool) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain tool
	*t = tool{}
	return json.UnmarshalDecode(dec, (*plain)(t))
}

// content is a message's content or a tool output: a string, or a list of parts.
type content struct {
	text  string
	parts []*part
}

func (c *content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*c = content{}
	switch k := dec.PeekKind(); k {
	case '"', 'n':
		return json.UnmarshalDecode(dec, &c.text)
	case '[':
		return json.UnmarshalDecode(dec, &c.parts)
	default:
		return chatjson.WantError("a string or an array of parts", k)
	}
}

// part is a content part: input_text, input_image, input_file, output_text or refusal.
type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
}

// tool is a tool of any type: function, custom, namespace, tool_search or a hosted one.
type tool struct {
	Type        string              `json:"type"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Parameters  chatjson.Parameters `json:"parameters"`
	Strict      *bool               `json:"strict"`
	// Execution is a tool_search's: "client" runs it, anything else is OpenAI's hosted one.
	Execution string `json:"execution"`
	// Format is a custom tool's input format: text, or a grammar, which the model is told
	// and not held to.
	Format *customFormat `json:"format"`
	// Tools are a namespace's.
	Tools []*tool `json:"tools"`
}

// customFormat is a custom tool's format: {type: text}, or {type: grammar, syntax: lark |
// regex, definition}.
type customFormat struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax"`
	Definition string `json:"definition"`
}

// Item and tool types.
const (
	typeMessage          = "message"
	typeFunctionCall     = "function_call"
	typeFunctionOutput   = "function_call_output"
	typeCustomCall       = "custom_tool_call"
	typeCustomOutput     = "custom_tool_call_output"
	typeReasoning        = "reasoning"
	typeItemReference    = "item_reference"
	typeAdditionalTools  = "additional_tools"
	typeToolSearchCall   = "tool_search_call"
	typeToolSearchOutput = "tool_search_output"
	typeFunction         = "function"
	typeCustom           = "custom"
	typeNamespace        = "namespace"
	// typeToolSearch is a search over the client's deferred tools, which it runs itself
	// with execution "client": a function named so to Bedrock.
	typeToolSearch       = "tool_search"
	executionClient      = "client"
	summaryTextPart      = "summary_text"
	outputTextPart       = "output_text"
	customInputParameter = "input"
	// namespaceSeparator joins a namespace and its tool's name into the name Bedrock gets,
	// in the characters Bedrock takes ([a-zA-Z0-9_-]).
	namespaceSeparator = "__"
	defaultTruncation  = "disabled"
)

// customParameters is the schema of a custom tool as Bedrock gets it: one string, the
// tool's free-form input.
var customParameters = []byte(`{"type":"object","properties":{"input":{"type":"string"}},"required":["input"]}`)

// hosted are the tools OpenAI runs itself, which Bedrock cannot: dropped from a request,
// or refused when tool_choice forces one.
var hosted = map[string]bool{
	"web_search": true, "web_search_2025_08_26": true, "web_search_preview": true, "web_search_preview_2025_03_11": true,
	"file_search": true, "code_interpreter": true, "image_generation": true, "computer_use_preview": true,
	"computer_use": true, "mcp": true, "local_shell": true,
}

// call is a decoded request, how to answer it and how to name its fields.
type call struct {
	req    *chat.Request
	stream bool
	st     *state
	// encrypted: include asked for reasoning.encrypted_content.
	encrypted bool
	// prior counts the items of the stored conversation before the request's own input.
	prior int
	// conversation is the input items the response is stored with: the stored
	// conversation's, then the request's own (item references resolved), a JSON array.
	conversation jsontext.Value
	// summary: reasoning.summary asked for the reasoning text as summary parts.
	summary bool
	// dropped are the paths of the hosted tools left out (x-gateway-dropped).
	dropped []string
	names   names
	paths   paths
	echo    echo
}

// names maps the tool names Bedrock sees back to the client's: a custom tool's calls are
// custom_tool_call items, a namespace's tools were flattened to "<namespace>__<name>",
// the client-run tool_search's calls are tool_search_call items.
type names struct {
	custom     map[string]bool
	namespaced map[string][2]string // flat name → namespace, name
	search     bool                 // a client-run tool_search is offered
}

// searches reports whether a call of flat is a tool_search_call.
func (n *names) searches(flat string) bool { return n.search && flat == typeToolSearch }

// whole reports whether a call of flat is streamed whole at its end, not in argument
// fragments: a custom tool's input is a string inside the arguments, and a tool_search
// call has no delta events.
func (n *names) whole(flat string) bool { return n.custom[flat] || n.searches(flat) }

// of is a flat tool name's namespace and name, and whether it is a custom tool.
func (n *names) of(flat string) (namespace, name string, custom bool) {
	custom = n.custom[flat]
	if nn, ok := n.namespaced[flat]; ok {
		return nn[0], nn[1], custom
	}
	return "", flat, custom
}

// echo is what the response says of the request's settings.
type echo struct {
	instructions                   *string
	previousResponseID             string
	tools, toolChoice, text        jsontext.Value
	metadata                       jsontext.Value
	parallelToolCalls              bool
	maxOutputTokens, maxToolCalls  *int32
	temperature, topP              *float64
	effort, summary                string
	store                          bool
	promptCacheKey, user, safetyID string
	serviceTier, truncation        string
}

// serviceTiers maps OpenAI's service_tier values to Bedrock's; "" sends none.
var serviceTiers = map[string]string{
	"": "", "auto": "", "default": "default", "flex": "flex", "priority": "priority", "fast": "priority", "scale": "reserved",
}

// encryptedContent is the include value that asks for sealed reasoning.
const encryptedContent = "reasoning.encrypted_content"

// decodeRequest reads a POST /v1/responses body into the chat model: the conversation of
// previous_response_id, then the input, from st (a nil st has no stored responses and
// opens no sealed reasoning). It refuses, naming the field, what the gateway cannot
// honour (background, unknown stored responses, reasoning it did not seal, hosted tools
// forced by tool_choice) and lists in req.Ignored what it accepts without effect.
func decodeRequest(body []byte, st *state) (*call, error) {
	var r request
	if err := chatjson.Decode(body, &r); err != nil {
		return nil, err
	}
	out := &chat.Request{
		Model:       r.Model,
		MaxTokens:   r.MaxOutputTokens.Int32(),
		Temperature: r.Temperature.Float64(),
		TopP:        r.TopP.Float64(),
		User:        r.User,
		CacheKey:    r.PromptCacheKey,

		ParallelToolCalls: r.ParallelToolCalls,
		MaxToolRounds:     r.MaxToolCalls.Int32(),
		CacheRetention:    r.PromptCacheRetention,
	}
	if r.SafetyIdentifier != "" {
		out.User = r.SafetyIdentifier
	}
	c := &call{req: out, stream: r.Stream, st: st, encrypted: slices.Contains(r.Include, encryptedContent)}
	switch {
	case r.Background != nil && *r.Background:
		return nil, unsupportedParameter("background: background responses are not supported; the gateway answers while the request is open")
	case r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1:
		return nil, invalid("max_output_tokens must be at least 1, got %d", *r.MaxOutputTokens)
	}
	tier, ok := serviceTiers[r.ServiceTier]
	if !ok {
		return nil, invalid(`service_tier %s is not one of "auto", "default", "flex", "priority", "fast", "scale"`, clip.Quote(r.ServiceTier))
	}
	out.ServiceTier = tier
	if r.Reasoning != nil {
		out.ReasoningEffort = r.Reasoning.Effort
		summary := r.Reasoning.Summary
		if summary == "" {
			summary = r.Reasoning.GenerateSummary
		}
		switch summary {
		case "", "auto", "concise", "detailed":
			c.summary = summary != ""
		default:
			return nil, invalid(`reasoning.summary %s is not one of "auto", "concise", "detailed"`, clip.Quote(summary))
		}
		c.echo.effort, c.echo.summary = r.Reasoning.Effort, summary
	}
	if r.Text != nil && r.Text.Format != nil {
		f := r.Text.Format
		out.ResponseFormat = &chat.ResponseFormat{Type: f.Type, Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
	}
	var ignored []string
	var err error
	if ignored, err = c.tools(r.Tools, "tools", false, ignored); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = c.toolChoice(r.ToolChoice); err != nil {
		return nil, err
	}
	if instr := r.Instructions; instr != nil && *instr != "" {
		out.Messages = append(out.Messages, chat.Message{Role: chat.RoleSystem, Content: *instr})
		c.paths.messages = append(c.paths.messages, origin{item: fromInstructions})
	}
	var prior []*item
	if r.PreviousResponseID != "" {
		rec, err := st.load(r.PreviousResponseID, "previous_response_id")
		if err != nil {
			return nil, err
		}
		if c.conversation, prior, err = priorItems(rec); err != nil {
			return nil, err
		}
	}
	// What the decoded form does not keep, as the client wrote it: the input's items and
	// the tools and text the response echoes. Read again in one pass; Decode read it already.
	var raw struct {
		Input jsontext.Value `json:"input"`
		Tools jsontext.Value `json:"tools"`
		Text  jsontext.Value `json:"text"`
	}
	_ = json.Unmarshal(body, &raw, chatjson.Lenient)
	if ignored, err = c.input(&r.Input, prior, ownItems(raw.Input), ignored); err != nil {
		return nil, err
	}
	out.Ignored = r.ignored(ignored)
	c.setEcho(&r, raw.Tools, raw.Text)
	return c, nil
}

// ignored lists the top-level members accepted without effect after those of the items
// and tools: settings the gateway does not honour yet, then every undeclared member that
// is not null, at most httpx.MaxIgnored in all.
func (r *request) ignored(out []string) []string {
	for i, inc := range r.Include { // logprobs and sources are not honoured
		if inc != encryptedContent {
			out = append(out, "include["+strconv.Itoa(i)+"]")
		}
	}
	if len(r.ClientMetadata) > 0 && r.ClientMetadata.Kind() != 'n' {
		out = append(out, "client_metadata")
	}
	if r.Truncation != "" && r.Truncation != defaultTruncation {
		out = append(out, "truncation")
	}
	if r.Text != nil && r.Text.Verbosity != "" {
		out = append(out, "text.verbosity")
	}
	if len(r.StreamOptions) > 0 && r.StreamOptions.Kind() != 'n' {
		out = append(out, "stream_options")
	}
	if len(out) > httpx.MaxIgnored {
		out = out[:httpx.MaxIgnored]
	}
	return chatjson.UnknownMembers(out, r.Unknown, httpx.MaxIgnored)
}

// setEcho keeps what the response echoes of the request: the tools and text as the
// client wrote them (a hosted tool's options too), as their decoded form keeps only what
// the gateway uses. Everything is copied out of the body, whose buffer goes back to its
// pool.
func (c *call) setEcho(r *request, tools, text jsontext.Value) {
	e := &c.echo
	e.instructions = r.Instructions
	e.previousResponseID = r.PreviousResponseID
	e.parallelToolCalls = r.ParallelToolCalls == nil || *r.ParallelToolCalls
	e.maxOutputTokens, e.maxToolCalls = r.MaxOutputTokens.Int32(), r.MaxToolCalls.Int32()
	e.temperature, e.topP = r.Temperature.Float64(), r.TopP.Float64()
	e.store = r.Store == nil || *r.Store
	e.promptCacheKey, e.user, e.safetyID = r.PromptCacheKey, r.User, r.SafetyIdentifier
	e.serviceTier, e.truncation = r.ServiceTier, r.Truncation
	if len(r.ToolChoice) > 0 && r.ToolChoice.Kind() != 'n' {
		e.toolChoice = r.ToolChoice.Clone()
	}
	if len(r.Metadata) > 0 && r.Metadata.Kind() == '{' {
		e.metadata = r.Metadata.Clone()
	}
	if len(r.Tools) > 0 || r.Text != nil {
		e.tools, e.text = tools, text
	}
}

// tools flattens the tools of the list at (the request's, or an input item's) into
// functions: function tools as they are, custom tools as functions of one string, a
// namespace's tools named "<namespace>__<name>", a client-run tool_search as the function
// tool_search; hosted tools are dropped. An unknown type is refused. An input item's
// tools (inItem) already offered are left out: a search may load them again, a stored
// conversation's item may repeat the request's.
func (c *call) tools(ts []*tool, at string, inItem bool, ignored []string) ([]string, error) {
	for i, t := range ts {
		path := at + "[" + strconv.Itoa(i) + "]"
		if t == nil {
			return nil, nullElement(path)
		}
		switch {
		case t.Type == typeNamespace:
			for j, inner := range t.Tools {
				innerPath := path + ".tools[" + strconv.Itoa(j) + "]"
				if inner == nil {
					return nil, nullElement(innerPath)
				}
				if inner.Type != typeFunction && inner.Type != typeCustom {
					return nil, unsupported(`%s.type %s is not supported in a namespace; its tools are "function" or "custom"`, innerPath, clip.Quote(inner.Type))
				}
				if t.Name == "" {
					return nil, invalid("%s.name is empty", path)
				}
				flat := t.Name + namespaceSeparator + inner.Name
				if c.names.namespaced == nil {
					c.names.namespaced = map[string][2]string{}
				}
				c.names.namespaced[flat] = [2]string{t.Name, inner.Name}
				c.addTool(inner, flat, innerPath, inItem)
			}
		case t.Type == typeFunction || t.Type == typeCustom:
			c.addTool(t, t.Name, path, inItem)
		case t.Type == typeToolSearch && t.Execution == executionClient:
			c.names.search = true
			c.addTool(t, typeToolSearch, path, inItem)
		case hosted[t.Type] || t.Type == typeToolSearch:
			c.dropped = append(c.dropped, path)
			ignored = append(ignored, path)
		default:
			return nil, unsupported(`%s.type %s is not supported; tools are "function", "custom", "namespace", "tool_search" or a hosted tool, which is dropped`, path, clip.Quote(t.Type))
		}
	}
	return ignored, nil
}

// addTool adds a function, custom or tool_search tool under name; one of an input item
// only if no tool has that name yet.
func (c *call) addTool(t *tool, name, path string, inItem bool) {
	if inItem && slices.ContainsFunc(c.req.Tools, func(t chat.Tool) bool { return t.Name == name }) {
		return
	}
	out := chat.Tool{Type: typeFunction, Name: name, Description: t.Description, Parameters: t.Parameters}
	if t.Strict != nil {
		out.Strict = *t.Strict
	}
	if t.Type == typeCustom {
		out.Parameters, out.Strict = customParameters, false
		if c.names.custom == nil {
			c.names.custom = map[string]bool{}
		}
		c.names.custom[name] = true
		if f := t.Format; f != nil && f.Definition != "" {
			// Bedrock has no grammars: the model is told the input's, and not held to it.
			out.Description = strings.TrimSpace(out.Description + "\n\nThe input must match this " + f.Syntax + " grammar:\n" + f.Definition)
		}
	}
	c.req.Tools = append(c.req.Tools, out)
	c.paths.tools = append(c.paths.tools, path)
}

// choice is tool_choice as Responses writes it.
type choice struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Mode      string `json:"mode"`
	Tools     []*struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// toolChoice reads tool_choice: "auto", "none", "required", {type: function | custom,
// name}, {type: allowed_tools, mode, tools}; one forcing a hosted tool is refused, as the
// tool is dropped.
func (c *call) toolChoice(raw jsontext.Value) (chat.ToolChoice, error) {
	if len(raw) == 0 || raw.Kind() == 'n' {
		return chat.ToolChoice{}, nil
	}
	if raw.Kind() == '"' {
		var s string
		_ = json.Unmarshal(raw, &s, chatjson.Lenient)
		switch s {
		case "auto", "none", "required":
			return chat.ToolChoice{Mode: s}, nil
		}
		return chat.ToolChoice{}, invalid(`tool_choice %s is not one of "auto", "none", "required" or an object`, clip.Quote(s))
	}
	var o choice
	if err := json.Unmarshal(raw, &o, chatjson.Lenient); err != nil {
		return chat.ToolChoice{}, bodyErr("tool_choice", "want a string or an object of strings")
	}
	switch {
	case o.Type == typeFunction || o.Type == typeCustom:
		if o.Name == "" {
			return chat.ToolChoice{}, invalid(`tool_choice.name is required when tool_choice.type is %s`, clip.Quote(o.Type))
		}
		return chat.ToolChoice{Mode: chat.ChoiceFunction, Function: flatName(o.Namespace, o.Name)}, nil
	case o.Type == "allowed_tools":
		mode := o.Mode
		if mode != chat.ChoiceAuto && mode != chat.ChoiceRequired {
			return chat.ToolChoice{}, invalid(`tool_choice.mode %s is not one of "auto", "required"`, clip.Quote(o.Mode))
		}
		if len(o.Tools) == 0 {
			return chat.ToolChoice{}, invalid(`tool_choice.tools is empty; name at least one tool`)
		}
		names := make([]string, 0, len(o.Tools))
		for i, t := range o.Tools {
			switch {
			case t == nil:
				return chat.ToolChoice{}, nullElement(fmt.Sprintf("tool_choice.tools[%d]", i))
			case hosted[t.Type]:
				continue // dropped with its tool
			case t.Type != typeFunction && t.Type != typeCustom:
				return chat.ToolChoice{}, unsupported(`tool_choice.tools[%d].type %s is not supported; allowed tools are "function" or "custom"`, i, clip.Quote(t.Type))
			case t.Name == "":
				return chat.ToolChoice{}, invalid(`tool_choice.tools[%d].name is required`, i)
			}
			names = append(names, t.Name)
		}
		if len(names) == 0 {
			return chat.ToolChoice{}, unsupported(`tool_choice.tools names only hosted tools, which Bedrock cannot run; they are dropped`)
		}
		return chat.ToolChoice{Mode: mode, Allowed: names}, nil
	case hosted[o.Type]:
		return chat.ToolChoice{}, unsupported(`tool_choice.type %s forces a hosted tool, which Bedrock cannot run; it is dropped from tools`, clip.Quote(o.Type))
	case o.Type == "":
		return chat.ToolChoice{}, invalid(`tool_choice.type is required`)
	}
	return chat.ToolChoice{}, invalid(`tool_choice.type %s is not one of "function", "custom", "allowed_tools"`, clip.Quote(o.Type))
}

// flatName is the name Bedrock knows a namespace's tool by.
func flatName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + namespaceSeparator + name
}

// input turns the stored conversation's items (prior) and then the input into chat
// messages: a string is one user message; items become messages in order, consecutive tool
// calls (function_call, custom_tool_call) one assistant turn with the assistant message
// before them, outputs tool messages, and reasoning items' sealed blocks go on the
// assistant turn after them. own are the input's items as the client wrote them; with
// item references resolved, they follow the stored conversation's in c.conversation.
func (c *call) input(in *input, prior []*item, own []jsontext.Value, ignored []string) ([]string, error) {
	c.prior = len(prior)
	items := prior
	if in.text == nil {
		items = append(prior[:len(prior):len(prior)], in.items...)
	}
	var reasoning []chat.ReasoningBlock
	for i, it := range items {
		n := i - c.prior // the item's index in the input; below 0 one of the stored conversation
		path := "input[" + strconv.Itoa(n) + "]"
		at := n
		if n < 0 {
			path, at = "previous_response_id", fromPrevious
		}
		if it == nil {
			return nil, nullElement(path)
		}
		if it.Type == typeItemReference {
			ref, raw, err := c.st.reference(path, it.ID)
			if err != nil {
				return nil, err
			}
			if n < len(own) {
				own[n] = raw
			}
			it = ref
		}
		switch it.Type {
		case "", typeMessage:
			m, err := message(it, path)
			if err != nil {
				return nil, err
			}
			if m.Role == chat.RoleAssistant {
				m.Reasoning, reasoning = reasoning, nil
			}
			c.add(m, origin{item: at, field: "content"})
		case typeFunctionCall, typeCustomCall, typeToolSearchCall:
			tc := chat.ToolCall{ID: it.CallID, Type: typeFunction, Name: flatName(it.Namespace, it.Name), Arguments: string(it.Arguments)}
			switch it.Type {
			case typeCustomCall:
				args, _ := json.Marshal(map[string]string{customInputParameter: it.Input})
				tc.Arguments = string(args)
			case typeToolSearchCall:
				tc.Name = typeToolSearch
			}
			last := len(c.req.Messages) - 1
			if last < 0 || c.req.Messages[last].Role != chat.RoleAssistant || reasoning != nil {
				c.add(chat.Message{Role: chat.RoleAssistant, Reasoning: reasoning}, origin{item: at, field: "content"})
				reasoning, last = nil, last+1
			}
			c.req.Messages[last].ToolCalls = append(c.req.Messages[last].ToolCalls, tc)
			o := &c.paths.messages[last]
			o.calls = append(o.calls, n)
		case typeFunctionOutput, typeCustomOutput:
			m := chat.Message{Role: chat.RoleTool, ToolCallID: it.CallID}
			var err error
			if m.Content, m.Parts, err = parts(&it.Output, path+".output"); err != nil {
				return nil, err
			}
			c.add(m, origin{item: at, field: "output"})
		case typeToolSearchOutput:
			// Its result is the tools it loaded, as sent; they are tools of the request from
			// then on, as on OpenAI.
			c.add(chat.Message{Role: chat.RoleTool, ToolCallID: it.CallID, Content: string(it.Tools.raw)}, origin{item: at, field: "tools"})
			var err error
			if ignored, err = c.tools(it.Tools.tools, path+".tools", true, ignored); err != nil {
				return nil, err
			}
		case typeAdditionalTools:
			var err error
			if ignored, err = c.tools(it.Tools.tools, path+".tools", true, ignored); err != nil {
				return nil, err
			}
		case typeReasoning:
			var blocks []chat.ReasoningBlock
			if it.EncryptedContent != nil && *it.EncryptedContent != "" {
				var err error
				if blocks, err = c.st.open(path, *it.EncryptedContent, c.req.Model); err != nil {
					return nil, err
				}
			}
			// Without blocks of this model, the summary is the reasoning's text, which
			// Bedrock cannot take back without its signature.
			if blocks == nil && n >= 0 {
				ignored = append(ignored, path)
			}
			reasoning = append(reasoning, blocks...)
		case typeItemReference:
			return nil, invalid("%s: an item_reference names another item_reference", path)
		default:
			return nil, unsupported(`%s.type %s is not supported; items are "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "tool_search_call", "tool_search_output", "additional_tools", "reasoning" or "item_reference"`, path, clip.Quote(it.Type))
		}
	}
	if in.text != nil {
		c.req.Messages = append(c.req.Messages, chat.Message{Role: chat.RoleUser, Content: *in.text})
		c.paths.messages = append(c.paths.messages, origin{item: fromString})
	}
	c.conversation = joinArrays(c.conversation, joinValues(own))
	return ignored, nil
}

// ownItems are the items of input, the body's as it holds it; a string is one user message.
func ownItems(input jsontext.Value) []jsontext.Value {
	switch input.Kind() {
	case '"':
		m, _ := json.Marshal(map[string]any{"type": typeMessage, "role": chat.RoleUser, "content": input})
		return []jsontext.Value{m}
	case '[':
		var items []jsontext.Value
		_ = json.Unmarshal(input, &items)
		return items
	}
	return nil
}

// joinValues is values in one JSON array.
func joinValues(values []jsontext.Value) jsontext.Value {
	out := []byte{'['}
	for i, v := range values {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']')
}

// add appends a message and where it came from.
func (c *call) add(m chat.Message, o origin) {
	c.req.Messages = append(c.req.Messages, m)
	c.paths.messages = append(c.paths.messages, o)
}

var roles = map[string]string{
	"user": chat.RoleUser, "assistant": chat.RoleAssistant, "system": chat.RoleSystem, "developer": chat.RoleDeveloper,
}

// message is a message item at path.
func message(it *item, path string) (chat.Message, error) {
	role, ok := roles[it.Role]
	switch {
	case it.Role == "":
		return chat.Message{}, invalid("%s.role is missing", path)
	case !ok:
		return chat.Message{}, invalid(`%s.role %s is not one of "user", "assistant", "system", "developer"`, path, clip.Quote(it.Role))
	}
	m := chat.Message{Role: role}
	var err error
	m.Content, m.Parts, err = parts(&it.Content, path+".content")
	return m, err
}

// parts is a content's text, or its parts in the chat model, one for one.
func parts(c *content, path string) (string, []chat.Part, error) {
	if c.parts == nil {
		return c.text, nil, nil
	}
	out := make([]chat.Part, len(c.parts))
	for j, p := range c.parts {
		at := path + "[" + strconv.Itoa(j) + "]"
		if p == nil {
			return "", nil, nullElement(at)
		}
		switch p.Type {
		case "input_text", outputTextPart:
			out[j] = chat.Part{Type: chat.PartText, Text: p.Text}
		case "refusal":
			out[j] = chat.Part{Type: chat.PartRefusal, Text: p.Refusal}
		case "input_image":
			switch {
			case p.FileID != "":
				return "", nil, unsupported("%s.file_id is not supported: the gateway stores no files; send the image as a data URL in image_url", at)
			case p.ImageURL == "":
				return "", nil, invalid("%s.image_url is missing", at)
			case !strings.HasPrefix(p.ImageURL, "data:"):
				return "", nil, unsupported("%s.image_url: remote image URLs are not fetched; send the image inline as a data URL (data:image/png;base64,...)", at)
			}
			out[j] = chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: p.ImageURL, Detail: p.Detail}}
		case "input_file":
			switch {
			case p.FileID != "":
				return "", nil, unsupported("%s.file_id is not supported: the gateway stores no files; send the document in file_data", at)
			case p.FileURL != "":
				return "", nil, unsupported("%s.file_url: remote files are not fetched; send the document in file_data", at)
			}
			out[j] = chat.Part{Type: chat.PartFile, File: &chat.File{Data: p.FileData, Filename: p.Filename}}
		default:
			return "", nil, unsupported(`%s.type %s is not supported; parts are "input_text", "input_image", "input_file", "output_text" or "refusal"`, at, clip.Quote(p.Type))
		}
	}
	return "", out, nil
}

// invalid refuses a bad value, with a message that starts with the field's path.
func invalid(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

// unsupported refuses a value the gateway cannot honour.
func unsupported(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue, format, args...)
}

// unsupportedParameter refuses a parameter the gateway cannot honour.
func unsupportedParameter(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedParameter, format, args...)
}

// bodyErr refuses a member of the wrong JSON type.
func bodyErr(path, msg string) error {
	return fault.Refuse(fault.ErrInvalidBody, fault.ReasonInvalidValue, "%s: %s", path, msg)
}

// nullElement is a null element of a list.
func nullElement(path string) error { return bodyErr(path, "want an object, got null") }
