package nirmata

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// ErrInvalidJSON is the sentinel of DecodeRequest's errors about the body, wrapped with a
// message that names the field by its path ("messages[2].role: want a string, got
// number") or says why the body is not JSON ("body is not valid JSON: unexpected end of
// input at byte 57").
var ErrInvalidJSON = errors.New("invalid request body")

// The body of POST /llm-apps/chat (docs/PROTOCOL.md 3). null for a scalar or a list means
// absent, as json/v2 does by default; unknown members are ignored at every depth. Members
// that take several shapes have types of their own below.
type request struct {
	Model       string     `json:"model"`
	Messages    []*message `json:"messages"`
	Tools       []*tool    `json:"tools"`
	ToolChoice  toolChoice `json:"tool_choice"`
	Stream      bool       `json:"stream"`
	MaxTokens   *wholeInt  `json:"max_tokens"`
	Temperature *number    `json:"temperature"`
	TopP        *number    `json:"top_p"`
	Stop        stop       `json:"stop"`
}

type message struct {
	Role       string      `json:"role"`
	Content    content     `json:"content"`
	ToolCalls  []*toolCall `json:"tool_calls"`
	ToolCallID string      `json:"tool_call_id"`
	Name       string      `json:"name"`
}

// part is one content part. An assistant's refusal part carries its text in refusal.
type part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text"`
	Refusal  string    `json:"refusal"`
	ImageURL *imageURL `json:"image_url"`
	File     *file     `json:"file"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail"`
}

type file struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
	FileID   string `json:"file_id"`
}

// A member that appears twice keeps its last value whole: json/v2 would merge a repeated
// object into the first, so these objects start again from zero.

func (f *functionCall) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain functionCall
	*f = functionCall{}
	return json.UnmarshalDecode(dec, (*plain)(f))
}

func (f *functionDef) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain functionDef
	*f = functionDef{}
	return json.UnmarshalDecode(dec, (*plain)(f))
}

func (f *file) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain file
	*f = file{}
	return json.UnmarshalDecode(dec, (*plain)(f))
}

type toolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *functionCall `json:"function"`
}

type functionCall struct {
	Name      string    `json:"name"`
	Arguments arguments `json:"arguments"`
}

// tool holds both forms: wrapped {"type","function":{…}} (what the gollm client sends)
// and flat {"name","description","parameters"}; the wrapped one wins when both are there.
type tool struct {
	Type        string       `json:"type"`
	Function    *functionDef `json:"function"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Parameters  parameters   `json:"parameters"`
}

type functionDef struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Parameters  parameters `json:"parameters"`
}

// decodeOptions: invalid UTF-8 and unpaired surrogates become U+FFFD (every string the
// gateway passes on is valid UTF-8), and a key that appears twice keeps its last value,
// as clients built on encoding/json expect.
var decodeOptions = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// DecodeRequest reads a POST /llm-apps/chat body. It checks JSON syntax and the type of
// every known member; values (roles, tool names, argument JSON, limits) are the
// translator's to check. stream is the body's own "stream" switch.
func DecodeRequest(body []byte) (req *chat.Request, stream bool, err error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false, &requestError{"body is empty"}
	}
	var r request
	if k := jsontext.Value(bytes.TrimLeft(body, " \t\r\n")).Kind(); k != '{' && jsontext.Value(body).IsValid() {
		return nil, false, &requestError{"body must be a JSON object, got " + kindName(k)}
	}
	if err := json.Unmarshal(body, &r, decodeOptions); err != nil {
		var ce *choiceError
		var se *json.SemanticError
		if errors.As(err, &se) {
			// Unmarshal stops at the first misfit member, before it has read the rest. A
			// body that is not JSON at all must say so rather than blame a member.
			v := jsontext.Value(bytes.Clone(body))
			if serr := v.Compact(); serr != nil {
				return nil, false, bodyError(serr)
			}
		}
		if errors.As(err, &ce) {
			return nil, false, ce // an invalid request, not a malformed body
		}
		return nil, false, bodyError(err)
	}
	req, err = r.chat()
	if err != nil {
		return nil, false, err
	}
	return req, r.Stream, nil
}

// requestError is ErrInvalidJSON plus the detail.
type requestError struct{ detail string }

func (e *requestError) Error() string { return ErrInvalidJSON.Error() + ": " + e.detail }
func (e *requestError) Unwrap() error { return ErrInvalidJSON }

// bodyError words a decoding error for the client: the member's path in the REST body's
// own notation (messages[2].tool_calls[0].function.name) and what was wrong.
func bodyError(err error) error {
	var sy *jsontext.SyntacticError
	var se *json.SemanticError
	switch {
	case errors.As(err, &sy):
		return &requestError{"body " + translate.JSONErrorText(sy)}
	case errors.As(err, &se):
		path := memberPath(se.JSONPointer)
		var msg string
		var fe *fieldError
		switch {
		case errors.As(se.Err, &fe):
			msg = fe.msg
		case path == "":
			return &requestError{"body must be a JSON object, got " + kindName(se.JSONKind)}
		default:
			msg = "want " + wantOf(se) + ", got " + kindName(se.JSONKind)
		}
		if path == "" {
			return &requestError{msg}
		}
		return &requestError{path + ": " + msg}
	}
	return &requestError{err.Error()}
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

// content is a message's content: a string, null, or an array of parts.
type content struct {
	text  string
	parts []*part
}

func (c *content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"', 'n':
		*c = content{}
		return json.UnmarshalDecode(dec, &c.text)
	case '[':
		*c = content{}
		return json.UnmarshalDecode(dec, &c.parts)
	default:
		return wantErr("a string, null or an array of parts", k)
	}
}

// UnmarshalJSONFrom reads image_url as {url, detail}, or as a bare URL string, which some
// clients send.
func (u *imageURL) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"':
		return json.UnmarshalDecode(dec, &u.URL)
	case '{':
		type plain imageURL
		*u = imageURL{}
		return json.UnmarshalDecode(dec, (*plain)(u))
	default:
		return wantErr("an object or a string", k)
	}
}

// arguments is a tool call's arguments: the JSON text as a string, kept verbatim, or the
// object itself, which some clients send; its text is then kept exactly as written, so
// 12345678901234567890 is not rounded.
type arguments string

func (a *arguments) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"', 'n':
		return json.UnmarshalDecode(dec, (*string)(a))
	case '{':
		v, err := dec.ReadValue()
		*a = arguments(bytes.ToValidUTF8(v, []byte("\uFFFD")))
		return err
	default:
		return wantErr("a string or an object", k)
	}
}

// parameters is a tool's JSON Schema: an object, kept as its text with the whitespace
// between tokens removed and otherwise as written (key order, escapes, number spelling),
// so the schema reaches Bedrock as the client wrote it. null is absent.
type parameters []byte

func (p *parameters) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case 'n':
		_, err := dec.ReadToken()
		*p = nil
		return err
	case '{':
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		v = bytes.ToValidUTF8(v, []byte("\uFFFD")) // a copy: ReadValue's bytes are the decoder's
		if bytes.ContainsAny(v, " \t\r\n") {       // else it is compact already, and valid
			if err := v.Compact(); err != nil {
				return err
			}
		}
		*p = parameters(v)
		return nil
	default:
		return wantErr("an object", k)
	}
}

// stop is one stop sequence or a list of them.
type stop []string

func (s *stop) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case '"':
		var one string
		err := json.UnmarshalDecode(dec, &one)
		*s = stop{one}
		return err
	case 'n', '[':
		var list []stringElem
		if err := json.UnmarshalDecode(dec, &list); err != nil {
			return err
		}
		*s = make(stop, len(list))
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

// wholeInt is an int32 written as any JSON number of whole value: 1024, 1024.0 and 1e3
// are the same number to JSON; 1.5 and "1024" are not integers.
type wholeInt int32

func (w *wholeInt) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if k := dec.PeekKind(); k != '0' {
		return wantErr("an integer", k)
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	s := string(v)
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		*w = wholeInt(n)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err == nil && f != math.Trunc(f) {
		return &fieldError{"want an integer, got " + clip.String(s, clip.QuoteMax)}
	}
	if err != nil || f < math.MinInt32 || f > math.MaxInt32 {
		return &fieldError{"integer " + clip.String(s, clip.QuoteMax) + " is out of range"}
	}
	*w = wholeInt(f)
	return nil
}

// number is a float64 within float64's range.
type number float64

func (n *number) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
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
	*n = number(f)
	return nil
}

// toolChoice is "auto" | "none" | "required" | "any" (= required) | {"type":"function",
// "function":{"name":"X"}}; the object forms {"type":"auto"} (and none, required, any) and
// {"type":"function","name":"X"} are accepted too. null or "" leaves the choice to the
// model. Values are checked here, as the choice is read: a wrong one is an invalid
// request, worded as the translator words its own.
type toolChoice chat.ToolChoice

func (c *toolChoice) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch k := dec.PeekKind(); k {
	case 'n':
		_, err := dec.ReadToken()
		*c = toolChoice{}
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
		*c = toolChoice{Mode: mode}
		return nil
	case '{':
		var o struct {
			Type     *jsontext.Value `json:"type"`
			Function *struct {
				Name jsontext.Value `json:"name"`
			} `json:"function"`
			Name jsontext.Value `json:"name"`
		}
		if err := json.UnmarshalDecode(dec, &o); err != nil {
			return err
		}
		typ, typeIsString := stringOf(o.Type)
		switch {
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
			*c = toolChoice{Mode: chat.ChoiceFunction, Function: name}
			return nil
		case typeIsString:
			mode, ok := choiceMode(typ)
			if !ok {
				return invalidChoice(`tool_choice.type %s is not one of "auto", "none", "required", "any", "function"`, clip.Quote(typ))
			}
			*c = toolChoice{Mode: mode}
			return nil
		default:
			return invalidChoice(`tool_choice.type is required`)
		}
	default:
		return wantErr("a string or an object", k)
	}
}

// stringOf returns the string a raw JSON value holds, if it holds one.
func stringOf(v *jsontext.Value) (string, bool) {
	if v == nil || len(*v) == 0 || (*v)[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(*v, &s, decodeOptions) == nil
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

// choiceError is a tool_choice the gateway cannot honour: an invalid request (400), as
// the translator's own errors about the request are.
type choiceError struct{ msg string }

func (e *choiceError) Error() string { return translate.ErrInvalidRequest.Error() + ": " + e.msg }
func (e *choiceError) Unwrap() error { return translate.ErrInvalidRequest }

func invalidChoice(format string, args ...any) error {
	return &choiceError{fmt.Sprintf(format, args...)}
}

// nullElement is a null element of a list.
func nullElement(path string) error {
	return &requestError{path + ": want an object, got null"}
}

// chat is the request in the chat model.
func (r *request) chat() (*chat.Request, error) {
	out := &chat.Request{
		Model:      r.Model,
		ToolChoice: chat.ToolChoice(r.ToolChoice),
		Stop:       r.Stop,
	}
	if r.MaxTokens != nil {
		v := int32(*r.MaxTokens)
		out.MaxTokens = &v
	}
	if r.Temperature != nil {
		v := float64(*r.Temperature)
		out.Temperature = &v
	}
	if r.TopP != nil {
		v := float64(*r.TopP)
		out.TopP = &v
	}
	if len(r.Messages) > 0 {
		out.Messages = make([]chat.Message, len(r.Messages))
		for i, m := range r.Messages {
			if m == nil {
				return nil, nullElement(fmt.Sprintf("messages[%d]", i))
			}
			var err error
			if out.Messages[i], err = m.chat(i); err != nil {
				return nil, err
			}
		}
	}
	if len(r.Tools) > 0 {
		out.Tools = make([]chat.Tool, len(r.Tools))
		for i, t := range r.Tools {
			if t == nil {
				return nil, nullElement(fmt.Sprintf("tools[%d]", i))
			}
			out.Tools[i] = t.chat()
		}
	}
	return out, nil
}

func (m *message) chat(i int) (chat.Message, error) {
	out := chat.Message{Role: m.Role, Content: m.Content.text, ToolCallID: m.ToolCallID, Name: m.Name}
	if len(m.Content.parts) > 0 {
		out.Parts = make([]chat.Part, len(m.Content.parts))
		for j, p := range m.Content.parts {
			if p == nil {
				return out, nullElement(fmt.Sprintf("messages[%d].content[%d]", i, j))
			}
			out.Parts[j] = chat.Part{Type: p.Type, Text: p.Text}
			if p.Type == chat.PartRefusal {
				out.Parts[j].Text = p.Refusal
			}
			if p.ImageURL != nil {
				out.Parts[j].Image = &chat.ImageURL{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}
			}
			if p.File != nil {
				out.Parts[j].File = &chat.File{Data: p.File.FileData, Filename: p.File.Filename, FileID: p.File.FileID}
			}
		}
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

func (t *tool) chat() chat.Tool {
	if f := t.Function; f != nil {
		return chat.Tool{Type: t.Type, Name: f.Name, Description: f.Description, Parameters: f.Parameters, Wrapped: true}
	}
	return chat.Tool{Type: t.Type, Name: t.Name, Description: t.Description, Parameters: t.Parameters}
}
