// Package chatjson is the JSON both REST surfaces (the Nirmata API and OpenAI's) take for
// the parts of a chat call they share: messages, content parts, tool calls, tools, tool
// choice, stop sequences and numbers, declared as structs for json/v2
// (github.com/go-json-experiment/json), with the conversion to the chat model and one
// wording of every decoding error. Each surface declares its own top-level body from these
// and decodes it with Decode.
//
// Where the contracts are silent:
//
//   - Unknown members are ignored at every depth; a member that appears twice keeps its
//     last value.
//   - null for a scalar or a list means absent; a null element of a list (a null message,
//     tool, part or stop string) is an error.
//   - Integers are whole numbers within int32: 1024.0 and 1e3 are accepted, 1.5 and
//     "1024" are not.
//   - Arguments sent as an object keep their text exactly as written, and a tool's
//     parameters keep theirs with the whitespace between tokens removed (key order,
//     escapes and number spelling reach Bedrock unchanged).
//   - image_url may be an object {url, detail} or a bare URL string.
//   - Invalid UTF-8 and unpaired surrogates become U+FFFD.
//   - When a body is both malformed and misshapen, the syntax error wins.
package chatjson

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/memo"
)

// Lenient is how client JSON is read: invalid UTF-8 and unpaired surrogates become U+FFFD
// (every string the gateway passes on is valid UTF-8), and a key that appears twice keeps
// its last value, as clients built on encoding/json expect.
var Lenient = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Decode reads a request body into v, a pointer to a surface's body struct. It checks JSON
// syntax and the type of every known member; values are the caller's and the
// translator's to check. Its errors are refusals (fault.Refuse): of the body
// (fault.ErrInvalidBody), naming the member by its path ("messages[2].role: want a string,
// got number") or saying why the body is not JSON ("body is not valid JSON: unexpected end
// of input at byte 57"), or of a value refused as it was read (tool_choice).
func Decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return bodyErr("", "body is empty")
	}
	if k := jsontext.Value(bytes.TrimLeft(body, " \t\r\n")).Kind(); k != '{' && jsontext.Value(body).IsValid() {
		return bodyErr("", "body must be a JSON object, got "+kindName(k))
	}
	err := json.Unmarshal(body, v, Lenient)
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if errors.As(err, &se) {
		// Unmarshal stops at the first misfit member, before it has read the rest. A body
		// that is not JSON at all must say so rather than blame a member.
		v := jsontext.Value(bytes.Clone(body))
		if serr := v.Compact(); serr != nil {
			return bodyError(serr)
		}
	}
	var refused *fault.RequestError
	if errors.As(err, &refused) {
		return refused // a value refused as it was read (tool_choice)
	}
	return bodyError(err)
}

// encodeOptions: answers are written without HTML escaping and with non-ASCII as raw
// UTF-8; U+2028 and U+2029 are escaped (valid in JSON, but line terminators in JavaScript
// source before ES2019, so escaping them is free safety for JS consumers), and invalid
// UTF-8 becomes U+FFFD rather than an error.
var encodeOptions = json.JoinOptions(jsontext.EscapeForJS(true), jsontext.AllowInvalidUTF8(true))

// Append appends the JSON of v, one of a surface's declared answer structs, to dst. The
// encoder writes into dst itself, where json.Marshal would build a buffer of its own and
// return a copy of it.
func Append(dst []byte, v any) []byte {
	var e Encoder
	return e.Append(dst, v)
}

// Encoder is Append for many values: a stream keeps one, so the writer the encoder is
// given (which escapes to the heap through its interface) is not made again for each line.
// The zero Encoder is ready. Not safe for concurrent use.
type Encoder struct{ a appender }

// Append is the package's Append.
func (e *Encoder) Append(dst []byte, v any) []byte {
	e.a.b = dst
	if err := json.MarshalWrite(&e.a, v, encodeOptions); err != nil {
		panic("chatjson: encoding a declared answer: " + err.Error())
	}
	dst, e.a.b = e.a.b, nil
	return dst
}

type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// bodyErr refuses the body (fault.ErrInvalidBody) for the member at path ("" for the body
// as a whole).
func bodyErr(path, msg string) error {
	if path != "" {
		msg = path + ": " + msg
	}
	return fault.Refuse(fault.ErrInvalidBody, fault.ReasonInvalidValue, "%s", msg).At(path)
}

type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// Refusal is an assistant's refusal, as OpenAI's answers carry it; it stands for the
	// text when the message has no content.
	Refusal    string      `json:"refusal"`
	ToolCalls  []*ToolCall `json:"tool_calls"`
	ToolCallID string      `json:"tool_call_id"`
	Name       string      `json:"name"`
	// An assistant's reasoning, sent back (docs/PROTOCOL.md 11.3), under any of three
	// names; the first found wins, content parts coming before reasoning_details.
	ReasoningBlocks  []*ReasoningBlock `json:"reasoning_blocks"`
	ThinkingBlocks   []*ReasoningBlock `json:"thinking_blocks"`
	ReasoningDetails []*ReasoningBlock `json:"reasoning_details"`
	// CacheControl asks for a prompt-cache point after the message (docs/PROTOCOL.md 12.1).
	CacheControl *CacheControl `json:"cache_control"`
}

// ReasoningBlock is a block of a model's reasoning: {"type":"thinking","thinking",
// "signature"} or {"type":"redacted_thinking","data"} as the gateway answers it, or a
// reasoning_details element ({text, signature} or {data}). Answers write it with every
// member its type has, so a block with empty text still says "thinking":"".
type ReasoningBlock struct {
	Type      string  `json:"type"`
	Thinking  *string `json:"thinking,omitzero"`
	Text      *string `json:"text,omitzero"`
	Signature *string `json:"signature,omitzero"`
	Data      *string `json:"data,omitzero"`
}

// Reasoning types.
const (
	TypeThinking         = "thinking"
	TypeRedactedThinking = "redacted_thinking"
)

// Block is the answer form of a block.
func Block(b *chat.ReasoningBlock) ReasoningBlock {
	if b.Redacted {
		return ReasoningBlock{Type: TypeRedactedThinking, Data: &b.Data}
	}
	return ReasoningBlock{Type: TypeThinking, Thinking: &b.Text, Signature: &b.Signature}
}

// Blocks is the answer form of blocks; nil when there are none.
func Blocks(bs []chat.ReasoningBlock) []ReasoningBlock {
	if len(bs) == 0 {
		return nil
	}
	out := make([]ReasoningBlock, len(bs))
	for i := range bs {
		out[i] = Block(&bs[i])
	}
	return out
}

// chat is the chat model's block: redacted when it has data and no text, else thinking.
func (b *ReasoningBlock) chat() chat.ReasoningBlock {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	if b.Type == TypeRedactedThinking || b.Type != TypeThinking && b.Data != nil && b.Text == nil && b.Thinking == nil {
		return chat.ReasoningBlock{Redacted: true, Data: str(b.Data)}
	}
	text := b.Thinking
	if text == nil {
		text = b.Text
	}
	return chat.ReasoningBlock{Text: str(text), Signature: str(b.Signature)}
}

// Thinking is Anthropic's thinking switch: {"type": "enabled", "budget_tokens": N},
// {"type": "adaptive"} or {"type": "disabled"}.
type Thinking struct {
	Type         string    `json:"type"`
	BudgetTokens *WholeInt `json:"budget_tokens"`
}

// Chat is the chat model's switch; nil for nil.
func (t *Thinking) Chat() *chat.Thinking {
	if t == nil {
		return nil
	}
	return &chat.Thinking{Type: t.Type, BudgetTokens: t.BudgetTokens.Int32()}
}

// ResponseFormat is response_format (docs/PROTOCOL.md 13.3), the same in both REST bodies;
// the translator checks its values.
type ResponseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *JSONSchemaFormat `json:"json_schema"`
}

// JSONSchemaFormat is json_schema's object. The schema keeps its text, as a tool's
// parameters do; strict is read and has no effect (the schema is always asked for).
type JSONSchemaFormat struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Schema      Parameters `json:"schema"`
	Strict      bool       `json:"strict"`
}

// Chat is the chat model's response format; nil for nil.
func (f *ResponseFormat) Chat() *chat.ResponseFormat {
	if f == nil {
		return nil
	}
	out := &chat.ResponseFormat{Type: f.Type}
	if s := f.JSONSchema; s != nil {
		out.Name, out.Description, out.Schema, out.Strict = s.Name, s.Description, s.Schema, s.Strict
	}
	return out
}

// Part is one content part. An assistant's refusal part carries its text in refusal.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text"`
	Refusal  string    `json:"refusal"`
	ImageURL *ImageURL `json:"image_url"`
	File     *File     `json:"file"`
	// A thinking part's text and signature, or a redacted_thinking part's data.
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
	// CacheControl asks for a prompt-cache point right after the part.
	CacheControl *CacheControl `json:"cache_control"`
}

// CacheControl is a prompt-cache hint, {"type": "ephemeral", "ttl": "5m" | "1h"}; the
// translator checks its values.
type CacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

func (c *CacheControl) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain CacheControl
	*c = CacheControl{}
	return json.UnmarshalDecode(dec, (*plain)(c))
}

// chat is the hint in the chat model; nil when absent.
func (c *CacheControl) chat() *chat.CacheControl {
	if c == nil {
		return nil
	}
	return &chat.CacheControl{Type: c.Type, TTL: c.TTL}
}

// File is a file part's file: its data inline (a data URL or bare base64), or an id the
// gateway refuses (it stores no files).
type File struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
	FileID   string `json:"file_id"`
}

func (f *File) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain File
	*f = File{}
	return json.UnmarshalDecode(dec, (*plain)(f))
}

type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail"`
}

// A member that appears twice keeps its last value whole: json/v2 would merge a repeated
// object into the first, so these objects start again from zero.

func (f *FunctionCall) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain FunctionCall
	*f = FunctionCall{}
	return json.UnmarshalDecode(dec, (*plain)(f))
}

func (f *FunctionDef) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain FunctionDef
	*f = FunctionDef{}
	return json.UnmarshalDecode(dec, (*plain)(f))
}

type ToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *FunctionCall `json:"function"`
}

type FunctionCall struct {
	Name      string    `json:"name"`
	Arguments Arguments `json:"arguments"`
}

// Tool holds both forms: wrapped {"type","function":{…}} (what the gollm client sends)
// and flat {"name","description","parameters"}; the wrapped one wins when both are there.
type Tool struct {
	Type        string       `json:"type"`
	Function    *FunctionDef `json:"function"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Parameters  Parameters   `json:"parameters"`
	// CacheControl asks for a prompt-cache point after the tool; function.cache_control
	// wins when both are there.
	CacheControl *CacheControl `json:"cache_control"`
	// Strict is the flat form's strict (docs/PROTOCOL.md 13.1); a wrapped tool's is
	// function.strict.
	Strict bool `json:"strict"`
}

type FunctionDef struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Parameters  Parameters `json:"parameters"`
	// Strict asks for arguments that match the schema exactly (docs/PROTOCOL.md 13.1).
	Strict       bool          `json:"strict"`
	CacheControl *CacheControl `json:"cache_control"`
}

// Named is what a body Decode refused names of its call, as far as it can be read: its
// model and whether it asks for a stream (both members of every REST surface's body),
// for the access line. A member after the first one of the wrong JSON type is not read.
func Named(body []byte) (model string, stream bool) {
	var named struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &named, Lenient)
	return named.Model, named.Stream
}

// UnknownMembers appends to out the names of the members of unknown (a body's undeclared
// members, as json/v2 embeds them) that are not null, each cut to 64 bytes, until out holds
// max names. unknown is read as leniently as the body was: a member named twice is listed
// twice, invalid UTF-8 is U+FFFD.
func UnknownMembers(out []string, unknown jsontext.Value, max int) []string {
	if len(unknown) == 0 {
		return out
	}
	dec := jsontext.NewDecoder(bytes.NewReader(unknown), Lenient)
	if _, err := dec.ReadToken(); err != nil { // {
		return out
	}
	for len(out) < max && dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			break
		}
		member := clip.String(name.String(), maxMemberName) // before the token is voided
		if dec.PeekKind() != 'n' {
			out = append(out, member)
		}
		if err := dec.SkipValue(); err != nil {
			break
		}
	}
	return out
}

// maxMemberName bounds a listed member's name.
const maxMemberName = 64

// bodyError words a decoding error for the client: the member's path in the REST body's
// own notation (messages[2].tool_calls[0].function.name) and what was wrong.
func bodyError(err error) error {
	var sy *jsontext.SyntacticError
	var se *json.SemanticError
	switch {
	case errors.As(err, &sy):
		return bodyErr("", "body "+fault.JSONErrorText(sy))
	case errors.As(err, &se):
		path := memberPath(se.JSONPointer)
		var fe *fieldError
		switch {
		case errors.As(se.Err, &fe):
			return bodyErr(path, fe.msg)
		case path == "":
			return bodyErr("", "body must be a JSON object, got "+kindName(se.JSONKind))
		}
		return bodyErr(path, "want "+wantOf(se)+", got "+kindName(se.JSONKind))
	}
	return bodyErr("", err.Error())
}

// memberPath turns a JSON pointer (/messages/2/content/0) into the REST body's notation
// (messages[2].content[0]). Every number in a pointer into this body is an array index:
// no member of it has a numeric name.
func memberPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// KindName names a JSON kind as the errors say it ("string", "array", "null").
func KindName(k jsontext.Kind) string { return kindName(k) }

// WantError is the error of a member of the wrong JSON kind, for a surface's own
// UnmarshalJSONFrom: Decode answers it as "<path>: want <want>, got <kind>".
func WantError(want string, k jsontext.Kind) error { return wantErr(want, k) }

// kindName names a JSON kind as the errors say it.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "nothing"
}

// wantOf says what a member of the Go type of a semantic error takes.
func wantOf(se *json.SemanticError) string {
	if se.GoType == nil {
		return "a value"
	}
	switch se.GoType.Kind().String() {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "ptr", "map":
		return "an object"
	}
	return "a value"
}

// fieldError is a message of this package's own about a member; the member's path comes
// from where json/v2 found it.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func wantErr(want string, k jsontext.Kind) error {
	return &fieldError{"want " + want + ", got " + kindName(k)}
}

// Elements of lists are pointers: json/v2 reads null as a nil element, which the
// conversion to the chat model refuses (a null message, tool, call or part has no meaning),
// naming it by its index.

// Content is a message's content: a string, null, or an array of parts.
type Content struct {
	text  string
	parts []*Part
}

func (c *Content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"', 'n':
		*c = Content{}
		return json.UnmarshalDecode(dec, &c.text)
	case '[':
		*c = Content{}
		return json.UnmarshalDecode(dec, &c.parts)
	default:
		return wantErr("a string, null or an array of parts", k)
	}
}

// UnmarshalJSONFrom reads image_url as {url, detail}, or as a bare URL string, which some
// clients send.
func (u *ImageURL) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"':
		return json.UnmarshalDecode(dec, &u.URL)
	case '{':
		type plain ImageURL
		*u = ImageURL{}
		return json.UnmarshalDecode(dec, (*plain)(u))
	default:
		return wantErr("an object or a string", k)
	}
}

// Arguments is a tool call's arguments: the JSON text as a string, kept verbatim, or the
// object itself, which some clients send; its text is then kept exactly as written, so
// 12345678901234567890 is not rounded.
type Arguments string

func (a *Arguments) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"', 'n':
		return json.UnmarshalDecode(dec, (*string)(a))
	case '{':
		v, err := dec.ReadValue()
		*a = Arguments(bytes.ToValidUTF8(v, []byte("\uFFFD")))
		return err
	default:
		return wantErr("a string or an object", k)
	}
}

// Parameters is a tool's JSON Schema: an object, kept as its text with the whitespace
// between tokens removed and otherwise as written (key order, escapes, number spelling),
// so the schema reaches Bedrock as the client wrote it. null is absent. A decoded
// Parameters is shared between requests (see schemas): it must not be changed.
type Parameters []byte

// schemas are the schemas Parameters read, by the text the client sent: clients send the
// same tools with every request, so each distinct schema is compacted and checked once. It
// keeps at most 8 MiB of schemas, both texts counted.
var schemas = memo.New[Parameters](8 << 20)

func (p *Parameters) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case 'n':
		_, err := dec.ReadToken()
		*p = nil
		return err
	case '{':
		raw, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if kept, ok := schemas.Get(raw); ok {
			*p = kept
			return nil
		}
		v := jsontext.Value(bytes.ToValidUTF8(raw, []byte("\uFFFD"))) // a copy: ReadValue's bytes are the decoder's
		// Compact checks again, without the body's leniency: a schema reaches Bedrock as
		// JSON the marshaller accepts, so a member named twice is refused here.
		if err := v.Compact(jsontext.AllowDuplicateNames(false)); err != nil {
			return &fieldError{strings.TrimPrefix(fault.JSONErrorText(err), "is ")}
		}
		*p = Parameters(slices.Clip(v)) // an append to it copies
		schemas.Put(raw, *p, len(*p))
		return nil
	default:
		return wantErr("an object", k)
	}
}

// Stop is one stop sequence or a list of them.
type Stop []string

func (s *Stop) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"':
		var one string
		err := json.UnmarshalDecode(dec, &one)
		*s = Stop{one}
		return err
	case 'n', '[':
		var list []stringElem
		if err := json.UnmarshalDecode(dec, &list); err != nil {
			return err
		}
		*s = make(Stop, len(list))
		for i, e := range list {
			(*s)[i] = string(e)
		}
		return nil
	default:
		return wantErr("a string or an array of strings", k)
	}
}

// stringElem is a string element of a list; null is not one.
type stringElem string

func (e *stringElem) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if k := dec.PeekKind(); k != '"' {
		return wantErr("a string", k)
	}
	return json.UnmarshalDecode(dec, (*string)(e))
}

// WholeInt is an int32 written as any JSON number of whole value: 1024, 1024.0 and 1e3
// are the same number to JSON; 1.5 and "1024" are not integers.
type WholeInt int32

func (w *WholeInt) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if k := dec.PeekKind(); k != '0' {
		return wantErr("an integer", k)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	s := string(v)
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		*w = WholeInt(n)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err == nil && f != math.Trunc(f) {
		return &fieldError{"want an integer, got " + clip.String(s, clip.QuoteMax)}
	}
	if err != nil || f < math.MinInt32 || f > math.MaxInt32 {
		return &fieldError{"integer " + clip.String(s, clip.QuoteMax) + " is out of range"}
	}
	*w = WholeInt(f)
	return nil
}

// Number is a float64 within float64's range.
type Number float64

func (n *Number) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if k := dec.PeekKind(); k != '0' {
		return wantErr("a number", k)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return &fieldError{"number " + clip.String(string(v), clip.QuoteMax) + " is out of range"}
	}
	*n = Number(f)
	return nil
}

// ToolChoice is "auto" | "none" | "required" | "any" (= required) | {"type":"function",
// "function":{"name":"X"}}; the object forms {"type":"auto"} (and none, required, any) and
// {"type":"function","name":"X"} are accepted too. null or "" leaves the choice to the
// model. Values are checked here, as the choice is read: a wrong one is an invalid
// request, worded as the translator words its own.
type ToolChoice chat.ToolChoice

func (c *ToolChoice) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case 'n':
		_, err := dec.ReadToken()
		*c = ToolChoice{}
		return err
	case '"':
		var s string
		if err := json.UnmarshalDecode(dec, &s); err != nil {
			return err
		}
		mode, ok := choiceMode(s)
		if !ok {
			return invalidChoice(`tool_choice %s is not one of "auto", "none", "required", "any" or a function object`, clip.Quote(s))
		}
		*c = ToolChoice{Mode: mode}
		return nil
	case '{':
		var o struct {
			Type     *jsontext.Value `json:"type"`
			Function *struct {
				Name jsontext.Value `json:"name"`
			} `json:"function"`
			Name         jsontext.Value `json:"name"`
			AllowedTools *allowedTools  `json:"allowed_tools"`
		}
		if err := json.UnmarshalDecode(dec, &o); err != nil {
			return err
		}
		typ, typeIsString := stringOf(o.Type)
		switch {
		case typeIsString && typ == "allowed_tools":
			return c.allowed(o.AllowedTools)
		case typeIsString && typ == "custom":
			return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue,
				`tool_choice.type "custom" is not supported; the only tool type is "function"`)
		case typeIsString && typ == chat.ChoiceFunction, o.Type == nil && o.Function != nil:
			name, ok := "", false
			if o.Function != nil {
				name, ok = stringOf(&o.Function.Name)
			}
			if !ok {
				name, ok = stringOf(&o.Name)
			}
			if !ok || name == "" {
				return invalidChoice(`tool_choice.function.name is required when tool_choice.type is "function"`)
			}
			*c = ToolChoice{Mode: chat.ChoiceFunction, Function: name}
			return nil
		case typeIsString:
			mode, ok := choiceMode(typ)
			if !ok {
				return invalidChoice(`tool_choice.type %s is not one of "auto", "none", "required", "any", "function"`, clip.Quote(typ))
			}
			*c = ToolChoice{Mode: mode}
			return nil
		default:
			return invalidChoice(`tool_choice.type is required`)
		}
	default:
		return wantErr("a string or an object", k)
	}
}

// allowedTools is OpenAI's {"mode": "auto" | "required", "tools": [{"type": "function",
// "function": {"name": …}}]}: the model may use only the named tools.
type allowedTools struct {
	Mode  string `json:"mode"`
	Tools []*struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
		Name string `json:"name"`
	} `json:"tools"`
}

func (c *ToolChoice) allowed(a *allowedTools) error {
	if a == nil {
		return invalidChoice(`tool_choice.allowed_tools is required when tool_choice.type is "allowed_tools"`)
	}
	mode, ok := map[string]string{"auto": chat.ChoiceAuto, "required": chat.ChoiceRequired}[a.Mode]
	if !ok {
		return invalidChoice(`tool_choice.allowed_tools.mode %s is not one of "auto", "required"`, clip.Quote(a.Mode))
	}
	if len(a.Tools) == 0 {
		return invalidChoice(`tool_choice.allowed_tools.tools is empty; name at least one tool`)
	}
	names := make([]string, len(a.Tools))
	for i, t := range a.Tools {
		switch {
		case t == nil:
			return nullElement(fmt.Sprintf("tool_choice.allowed_tools.tools[%d]", i))
		case t.Type != "" && t.Type != "function":
			return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue,
				`tool_choice.allowed_tools.tools[%d].type %s is not supported; the only tool type is "function"`, i, clip.Quote(t.Type))
		case t.Function != nil:
			names[i] = t.Function.Name
		default:
			names[i] = t.Name
		}
		if names[i] == "" {
			return invalidChoice(`tool_choice.allowed_tools.tools[%d].function.name is required`, i)
		}
	}
	*c = ToolChoice{Mode: mode, Allowed: names}
	return nil
}

// stringOf returns the string a raw JSON value holds, if it holds one.
func stringOf(v *jsontext.Value) (string, bool) {
	if v == nil || len(*v) == 0 || (*v)[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(*v, &s, Lenient) == nil
}

func choiceMode(s string) (string, bool) {
	switch s {
	case "":
		return "", true
	case "auto":
		return chat.ChoiceAuto, true
	case "none":
		return chat.ChoiceNone, true
	case "required", "any":
		return chat.ChoiceRequired, true
	}
	return "", false
}

// invalidChoice is a tool_choice the gateway cannot honour: an invalid request (400),
// worded as the translator words its own.
func invalidChoice(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

// nullElement is a null element of a list.
func nullElement(path string) error {
	return bodyErr(path, "want an object, got null")
}

// Messages converts messages to the chat model.
func Messages(ms []*Message) ([]chat.Message, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	out := make([]chat.Message, len(ms))
	for i, m := range ms {
		if m == nil {
			return nil, nullElement(fmt.Sprintf("messages[%d]", i))
		}
		var err error
		if out[i], err = m.chat(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Tools converts tools to the chat model.
func Tools(ts []*Tool) ([]chat.Tool, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]chat.Tool, len(ts))
	for i, t := range ts {
		if t == nil {
			return nil, nullElement(fmt.Sprintf("tools[%d]", i))
		}
		out[i] = t.chat()
	}
	return out, nil
}

// Int32 is w as the chat model's optional integer.
func (w *WholeInt) Int32() *int32 {
	if w == nil {
		return nil
	}
	v := int32(*w)
	return &v
}

// Float64 is n as the chat model's optional number.
func (n *Number) Float64() *float64 {
	if n == nil {
		return nil
	}
	v := float64(*n)
	return &v
}

func (m *Message) chat(i int) (chat.Message, error) {
	out := chat.Message{Role: m.Role, Content: m.Content.text, ToolCallID: m.ToolCallID, Name: m.Name, CacheControl: m.CacheControl.chat()}
	hasParts := false // reasoning parts
	if out.Content == "" && len(m.Content.parts) == 0 {
		out.Content = m.Refusal
	}
	if len(m.Content.parts) > 0 {
		out.Parts = make([]chat.Part, len(m.Content.parts))
		for j, p := range m.Content.parts {
			if p == nil {
				return out, nullElement(fmt.Sprintf("messages[%d].content[%d]", i, j))
			}
			out.Parts[j] = chat.Part{Type: p.Type, Text: p.Text, CacheControl: p.CacheControl.chat()}
			if p.Type == chat.PartRefusal {
				out.Parts[j].Text = p.Refusal
			}
			if p.ImageURL != nil {
				out.Parts[j].Image = &chat.ImageURL{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}
			}
			if p.File != nil {
				out.Parts[j].File = &chat.File{Data: p.File.FileData, Filename: p.File.Filename, FileID: p.File.FileID}
			}
			switch p.Type {
			case chat.PartThinking:
				out.Parts[j].Reasoning = &chat.ReasoningBlock{Text: p.Thinking, Signature: p.Signature}
				hasParts = true
			case chat.PartRedactedThinking:
				out.Parts[j].Reasoning = &chat.ReasoningBlock{Redacted: true, Data: p.Data}
				hasParts = true
			}
		}
	}
	blocks, name := m.ReasoningBlocks, "reasoning_blocks"
	if len(blocks) == 0 {
		blocks, name = m.ThinkingBlocks, "thinking_blocks"
	}
	if len(blocks) == 0 && !hasParts {
		blocks, name = m.ReasoningDetails, "reasoning_details"
	}
	for j, b := range blocks {
		if b == nil {
			return out, nullElement(fmt.Sprintf("messages[%d].%s[%d]", i, name, j))
		}
		out.Reasoning = append(out.Reasoning, b.chat())
	}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]chat.ToolCall, len(m.ToolCalls))
		for j, tc := range m.ToolCalls {
			if tc == nil {
				return out, nullElement(fmt.Sprintf("messages[%d].tool_calls[%d]", i, j))
			}
			out.ToolCalls[j] = chat.ToolCall{ID: tc.ID, Type: tc.Type}
			if tc.Function != nil {
				out.ToolCalls[j].Name, out.ToolCalls[j].Arguments = tc.Function.Name, string(tc.Function.Arguments)
			}
		}
	}
	return out, nil
}

func (t *Tool) chat() chat.Tool {
	if f := t.Function; f != nil {
		out := chat.Tool{Type: t.Type, Name: f.Name, Description: f.Description, Parameters: f.Parameters, Wrapped: true,
			CacheControl: t.CacheControl.chat(), Strict: f.Strict}
		if f.CacheControl != nil {
			out.CacheControl, out.CacheControlInFunction = f.CacheControl.chat(), true
		}
		return out
	}
	return chat.Tool{Type: t.Type, Name: t.Name, Description: t.Description, Parameters: t.Parameters, CacheControl: t.CacheControl.chat(),
		Strict: t.Strict}
}
