package jsonapi

import (
	"errors"
	"math"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsontext"
)

// ErrInvalidJSON is the sentinel of every error DecodeChatRequest returns. It is wrapped
// with a message that names the offending field by its JSON path
// ("messages[2].role: want a string, got number") or says why the body is not JSON
// ("body is not valid JSON: unexpected end of input at byte 57").
var ErrInvalidJSON = errors.New("invalid request body")

// requestError is what DecodeChatRequest returns: ErrInvalidJSON plus the detail.
type requestError struct{ detail error }

func (e *requestError) Error() string { return ErrInvalidJSON.Error() + ": " + e.detail.Error() }
func (e *requestError) Unwrap() error { return ErrInvalidJSON }

// DecodeChatRequest parses a POST /llm-apps/chat body (docs/PROTOCOL.md section 3) into a new
// ChatRequest. Unknown fields are ignored at every level. It checks JSON syntax and the
// type of every known field; the values themselves (roles, tool names, argument JSON,
// limits) are the translator's to check.
func DecodeChatRequest(body []byte) (*llmgatewayv1.ChatRequest, error) {
	req := &llmgatewayv1.ChatRequest{}
	var p parser
	p.Reset(body)
	err := p.request(req)
	if err == nil {
		return req, nil
	}
	if _, ok := err.(*fieldError); ok {
		// The parser stops at the first misfit field, before it has seen the rest of the
		// body. A body that is not JSON at all must say so rather than blame a field.
		if serr := jsontext.Validate(body); serr != nil {
			err = serr
		}
	}
	return nil, &requestError{detail: bodyError(err)}
}

func (p *parser) request(req *llmgatewayv1.ChatRequest) error {
	switch k := p.Peek(); k {
	case jsontext.KindObject:
	case jsontext.KindEOF:
		return errEmptyBody
	case jsontext.KindInvalid:
		return p.ValueError()
	default:
		return &fieldError{msg: "body must be a JSON object, got " + k.String()}
	}
	if err := p.Enter(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, more, err := p.NextKey(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch string(key) {
		case "model":
			req.Model, err = p.readStringValue()
			err = inField(err, "model")
		case "messages":
			req.Messages, err = p.messages()
			err = inField(err, "messages")
		case "tools":
			req.Tools, err = p.tools()
			err = inField(err, "tools")
		case "tool_choice":
			req.ToolChoice, err = p.toolChoice()
			err = inField(err, "tool_choice")
		case "stream":
			req.Stream, err = p.boolValue()
			err = inField(err, "stream")
		case "max_tokens":
			req.MaxTokens, err = p.int32Value()
			err = inField(err, "max_tokens")
		case "temperature":
			req.Temperature, err = p.floatValue()
			err = inField(err, "temperature")
		case "top_p":
			req.TopP, err = p.floatValue()
			err = inField(err, "top_p")
		case "stop":
			req.Stop, err = p.stop()
			err = inField(err, "stop")
		default:
			err = p.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	return p.End()
}

// boolValue reads a boolean; null reads as false.
func (p *parser) boolValue() (bool, error) {
	switch k := p.Peek(); k {
	case jsontext.KindBool:
		return p.ReadBool()
	case jsontext.KindNull:
		return false, p.ReadNull()
	default:
		return false, p.wantErr("a boolean", k)
	}
}

// int32Value reads an integer; null reads as absent (nil). A number written with a
// fraction or exponent is accepted when its value is whole (1024.0, 1e3), as JSON
// does not distinguish them; 1.5 is not.
func (p *parser) int32Value() (*int32, error) {
	switch k := p.Peek(); k {
	case jsontext.KindNumber:
		raw, err := p.ReadNumber()
		if err != nil {
			return nil, err
		}
		s := string(raw)
		if n, err := strconv.ParseInt(s, 10, 32); err == nil {
			v := int32(n)
			return &v, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && f != math.Trunc(f) {
			return nil, &fieldError{msg: "want an integer, got " + clip.String(s, clip.QuoteMax)}
		}
		if err != nil || f < math.MinInt32 || f > math.MaxInt32 {
			return nil, &fieldError{msg: "integer " + clip.String(s, clip.QuoteMax) + " is out of range"}
		}
		v := int32(f)
		return &v, nil
	case jsontext.KindNull:
		return nil, p.ReadNull()
	default:
		return nil, p.wantErr("an integer", k)
	}
}

// floatValue reads a number; null reads as absent (nil).
func (p *parser) floatValue() (*float64, error) {
	switch k := p.Peek(); k {
	case jsontext.KindNumber:
		raw, err := p.ReadNumber()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, &fieldError{msg: "number " + clip.String(string(raw), clip.QuoteMax) + " is out of range"}
		}
		return &f, nil
	case jsontext.KindNull:
		return nil, p.ReadNull()
	default:
		return nil, p.wantErr("a number", k)
	}
}

// stop reads a string (one stop sequence), an array of strings, or null (none).
func (p *parser) stop() ([]string, error) {
	switch k := p.Peek(); k {
	case jsontext.KindString:
		b, err := p.ReadString()
		if err != nil {
			return nil, err
		}
		return []string{string(b)}, nil
	case jsontext.KindNull:
		return nil, p.ReadNull()
	case jsontext.KindArray:
		if err := p.Enter(); err != nil {
			return nil, err
		}
		var out []string
		for i := 0; ; i++ {
			more, err := p.NextElem(i == 0)
			if err != nil {
				return nil, err
			}
			if !more {
				return out, nil
			}
			if k := p.Peek(); k != jsontext.KindString {
				return nil, inIndex(p.wantErr("a string", k), i)
			}
			b, err := p.ReadString()
			if err != nil {
				return nil, err
			}
			out = append(out, string(b))
		}
	default:
		return nil, p.wantErr("a string or an array of strings", k)
	}
}

// toolChoice reads "auto"-style strings and {"type":"function",...} objects as a
// structpb.Value; null reads as absent (nil).
func (p *parser) toolChoice() (*structpb.Value, error) {
	switch k := p.Peek(); k {
	case jsontext.KindString:
		b, err := p.ReadString()
		if err != nil {
			return nil, err
		}
		return structpb.NewStringValue(string(b)), nil
	case jsontext.KindObject:
		s, err := p.readStruct()
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	case jsontext.KindNull:
		return nil, p.ReadNull()
	default:
		return nil, p.wantErr("a string or an object", k)
	}
}

// parametersJSON reads a tool's parameters (a JSON Schema), which must be an object, and
// returns its text for the proto's parameters_json: compacted (whitespace between tokens
// removed) but otherwise exactly as written, so key order, string escapes and number
// spelling (12345678901234567890, 0.1) reach Bedrock unchanged (the translator only adds
// a missing root "type"). It is never decoded into a structpb.Struct, which would sort the
// keys and round the numbers through float64.
// null reads as absent ("").
func (p *parser) parametersJSON() (string, error) {
	switch k := p.Peek(); k {
	case jsontext.KindObject:
		return p.CompactValue()
	case jsontext.KindNull:
		return "", p.ReadNull()
	default:
		return "", p.wantErr("an object", k)
	}
}

// array reads null (no elements) or an array, calling elem for each element with the
// parser positioned before it. Errors from elem get the element's index in their path.
func (p *parser) array(elem func(i int) error) error {
	switch k := p.Peek(); k {
	case jsontext.KindNull:
		return p.ReadNull()
	case jsontext.KindArray:
	default:
		return p.wantErr("an array", k)
	}
	if err := p.Enter(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := p.NextElem(i == 0)
		if err != nil || !more {
			return err
		}
		if err := elem(i); err != nil {
			return inIndex(err, i)
		}
	}
}

// object reads an object (null is a shape error: the caller's elements are not scalars),
// calling member for each key with the parser positioned before the value. member
// returns the error of reading the value; the key is added to its path.
func (p *parser) object(member func(key []byte) error) error {
	if k := p.Peek(); k != jsontext.KindObject {
		return p.wantErr("an object", k)
	}
	if err := p.Enter(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, more, err := p.NextKey(first)
		if err != nil || !more {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
	}
}

// optObject is object, with null meaning absent: it reports whether an object was read.
func (p *parser) optObject(member func(key []byte) error) (bool, error) {
	if p.Peek() == jsontext.KindNull {
		return false, p.ReadNull()
	}
	return true, p.object(member)
}

func (p *parser) messages() ([]*llmgatewayv1.Message, error) {
	var out []*llmgatewayv1.Message
	err := p.array(func(int) error {
		m, err := p.message()
		out = append(out, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *parser) message() (*llmgatewayv1.Message, error) {
	m := &llmgatewayv1.Message{}
	err := p.object(func(key []byte) (err error) {
		switch string(key) {
		case "role":
			m.Role, err = p.readStringValue()
			return inField(err, "role")
		case "content":
			return inField(p.content(m), "content")
		case "tool_calls":
			m.ToolCalls, err = p.toolCalls()
			return inField(err, "tool_calls")
		case "tool_call_id":
			m.ToolCallId, err = p.readStringValue()
			return inField(err, "tool_call_id")
		case "name":
			m.Name, err = p.readStringValue()
			return inField(err, "name")
		default:
			return p.SkipValue()
		}
	})
	return m, err
}

// content reads a message's content: a string, null, or an array of parts.
func (p *parser) content(m *llmgatewayv1.Message) error {
	switch k := p.Peek(); k {
	case jsontext.KindString:
		b, err := p.ReadString()
		m.Content, m.Parts = string(b), nil
		return err
	case jsontext.KindNull:
		m.Content, m.Parts = "", nil
		return p.ReadNull()
	case jsontext.KindArray:
		m.Content, m.Parts = "", nil
		return p.array(func(int) error {
			part, err := p.part()
			m.Parts = append(m.Parts, part)
			return err
		})
	default:
		return p.wantErr("a string, null or an array of parts", k)
	}
}

func (p *parser) part() (*llmgatewayv1.ContentPart, error) {
	part := &llmgatewayv1.ContentPart{}
	err := p.object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			part.Type, err = p.readStringValue()
			return inField(err, "type")
		case "text":
			part.Text, err = p.readStringValue()
			return inField(err, "text")
		case "image_url":
			part.ImageUrl, err = p.imageURL()
			return inField(err, "image_url")
		default:
			return p.SkipValue()
		}
	})
	return part, err
}

// imageURL reads {"url":…,"detail":…}, or a bare URL string (sent by some clients);
// null reads as absent.
func (p *parser) imageURL() (*llmgatewayv1.ImageURL, error) {
	switch k := p.Peek(); k {
	case jsontext.KindString:
		b, err := p.ReadString()
		return &llmgatewayv1.ImageURL{Url: string(b)}, err
	case jsontext.KindNull:
		return nil, p.ReadNull()
	case jsontext.KindObject:
	default:
		return nil, p.wantErr("an object or a string", k)
	}
	img := &llmgatewayv1.ImageURL{}
	err := p.object(func(key []byte) (err error) {
		switch string(key) {
		case "url":
			img.Url, err = p.readStringValue()
			return inField(err, "url")
		case "detail":
			img.Detail, err = p.readStringValue()
			return inField(err, "detail")
		default:
			return p.SkipValue()
		}
	})
	if err != nil {
		return nil, err
	}
	return img, nil
}

func (p *parser) toolCalls() ([]*llmgatewayv1.ToolCall, error) {
	var out []*llmgatewayv1.ToolCall
	err := p.array(func(int) error {
		tc := &llmgatewayv1.ToolCall{}
		out = append(out, tc)
		return p.object(func(key []byte) (err error) {
			switch string(key) {
			case "id":
				tc.Id, err = p.readStringValue()
				return inField(err, "id")
			case "type":
				tc.Type, err = p.readStringValue()
				return inField(err, "type")
			case "function":
				tc.Function, err = p.functionCall()
				return inField(err, "function")
			default:
				return p.SkipValue()
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *parser) functionCall() (*llmgatewayv1.FunctionCall, error) {
	fn := &llmgatewayv1.FunctionCall{}
	ok, err := p.optObject(func(key []byte) (err error) {
		switch string(key) {
		case "name":
			fn.Name, err = p.readStringValue()
			return inField(err, "name")
		case "arguments":
			fn.Arguments, err = p.arguments()
			return inField(err, "arguments")
		default:
			return p.SkipValue()
		}
	})
	if err != nil || !ok {
		return nil, err
	}
	return fn, nil
}

// arguments reads a tool call's arguments: the JSON text as a string (kept verbatim), or
// the object itself, which some clients send; then its text is kept exactly as written,
// so numbers such as 12345678901234567890 survive unrounded.
func (p *parser) arguments() (string, error) {
	switch k := p.Peek(); k {
	case jsontext.KindString:
		b, err := p.ReadString()
		return string(b), err
	case jsontext.KindObject:
		return p.RawValue()
	case jsontext.KindNull:
		return "", p.ReadNull()
	default:
		return "", p.wantErr("a string or an object", k)
	}
}

func (p *parser) tools() ([]*llmgatewayv1.Tool, error) {
	var out []*llmgatewayv1.Tool
	err := p.array(func(int) error {
		t, err := p.tool()
		out = append(out, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// tool reads both the wrapped form {"type":"function","function":{…}} and the flat form
// {"name","description","parameters"}: every key goes to its own proto field (parameters
// to parameters_json, see parametersJSON), and the translator prefers function when both
// are set.
func (p *parser) tool() (*llmgatewayv1.Tool, error) {
	t := &llmgatewayv1.Tool{}
	err := p.object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			t.Type, err = p.readStringValue()
			return inField(err, "type")
		case "function":
			t.Function, err = p.functionDefinition()
			return inField(err, "function")
		case "name":
			t.Name, err = p.readStringValue()
			return inField(err, "name")
		case "description":
			t.Description, err = p.readStringValue()
			return inField(err, "description")
		case "parameters":
			t.ParametersJson, err = p.parametersJSON()
			return inField(err, "parameters")
		default:
			return p.SkipValue()
		}
	})
	return t, err
}

func (p *parser) functionDefinition() (*llmgatewayv1.FunctionDefinition, error) {
	fd := &llmgatewayv1.FunctionDefinition{}
	ok, err := p.optObject(func(key []byte) (err error) {
		switch string(key) {
		case "name":
			fd.Name, err = p.readStringValue()
			return inField(err, "name")
		case "description":
			fd.Description, err = p.readStringValue()
			return inField(err, "description")
		case "parameters":
			fd.ParametersJson, err = p.parametersJSON()
			return inField(err, "parameters")
		default:
			return p.SkipValue()
		}
	})
	if err != nil || !ok {
		return nil, err
	}
	return fd, nil
}
