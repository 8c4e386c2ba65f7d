package jsonapi

import (
	"errors"
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsontext"
)

// parser reads a request body in document order with a jsontext.Reader, so the caller
// decides per key what to expect and can name the exact path of a mismatch. It allocates
// only for the strings and structures it returns. Not safe for concurrent use.
type parser struct {
	jsontext.Reader
}

// errEmptyBody is a body with nothing but whitespace in it.
var errEmptyBody = errors.New("body is empty")

// bodyError words an error of the reader for the wire: "body is not valid JSON: invalid
// character 'x' looking for beginning of value at byte 0", "body nests deeper than 1000
// levels at byte 1004". Other errors pass unchanged.
func bodyError(err error) error {
	switch err.(type) {
	case *jsontext.SyntaxError:
		return errors.New("body is not valid JSON: " + err.Error())
	case *jsontext.DepthError:
		return errors.New("body " + err.Error())
	}
	return err
}

// fieldError is well-formed JSON of the wrong shape. path is filled in on the way out of
// the recursion (see inField and inIndex), so the happy path builds no path strings.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// inField prefixes a fieldError's path with an object key.
func inField(err error, name string) error {
	if fe, ok := err.(*fieldError); ok {
		switch {
		case fe.path == "":
			fe.path = name
		case fe.path[0] == '[':
			fe.path = name + fe.path
		default:
			fe.path = name + "." + fe.path
		}
	}
	return err
}

// inIndex prefixes a fieldError's path with an array index.
func inIndex(err error, i int) error {
	if fe, ok := err.(*fieldError); ok {
		seg := "[" + strconv.Itoa(i) + "]"
		switch {
		case fe.path == "" || fe.path[0] == '[':
			fe.path = seg + fe.path
		default:
			fe.path = seg + "." + fe.path
		}
	}
	return err
}

// wantErr is the shape error for the next value (which Peek has classified as k), or a
// syntax error when there is no value at all.
func (p *parser) wantErr(want string, k jsontext.Kind) error {
	if k == jsontext.KindEOF || k == jsontext.KindInvalid {
		return p.ValueError()
	}
	return &fieldError{msg: "want " + want + ", got " + k.String()}
}

// readStringValue reads a string; null reads as "".
func (p *parser) readStringValue() (string, error) {
	switch k := p.Peek(); k {
	case jsontext.KindString:
		b, err := p.ReadString()
		return string(b), err
	case jsontext.KindNull:
		return "", p.ReadNull()
	default:
		return "", p.wantErr("a string", k)
	}
}

// readStructValue reads any JSON value as a structpb.Value.
func (p *parser) readStructValue() (*structpb.Value, error) {
	switch k := p.Peek(); k {
	case jsontext.KindNull:
		return structpb.NewNullValue(), p.ReadNull()
	case jsontext.KindBool:
		b, err := p.ReadBool()
		return structpb.NewBoolValue(b), err
	case jsontext.KindNumber:
		raw, err := p.ReadNumber()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			// The syntax is already checked, so this is a range error: protojson could
			// not write ±Inf back out, so refuse it here.
			return nil, &fieldError{msg: "number " + clip.String(string(raw), clip.QuoteMax) + " is out of range"}
		}
		return structpb.NewNumberValue(f), nil
	case jsontext.KindString:
		b, err := p.ReadString()
		if err != nil {
			return nil, err
		}
		return structpb.NewStringValue(string(b)), nil
	case jsontext.KindArray:
		l, err := p.readList()
		if err != nil {
			return nil, err
		}
		return structpb.NewListValue(l), nil
	case jsontext.KindObject:
		s, err := p.readStruct()
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	default:
		return nil, p.ValueError()
	}
}

// readList reads an array (the caller has peeked KindArray) as a structpb.ListValue.
func (p *parser) readList() (*structpb.ListValue, error) {
	if err := p.Enter(); err != nil {
		return nil, err
	}
	l := &structpb.ListValue{}
	for i := 0; ; i++ {
		more, err := p.NextElem(i == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return l, nil
		}
		v, err := p.readStructValue()
		if err != nil {
			return nil, inIndex(err, i)
		}
		l.Values = append(l.Values, v)
	}
}

// readStruct reads an object (the caller has peeked KindObject) as a structpb.Struct. A
// repeated key keeps its last value, as in encoding/json.
func (p *parser) readStruct() (*structpb.Struct, error) {
	if err := p.Enter(); err != nil {
		return nil, err
	}
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for first := true; ; first = false {
		kb, more, err := p.NextKey(first)
		if err != nil {
			return nil, err
		}
		if !more {
			return s, nil
		}
		key := string(kb)
		v, err := p.readStructValue()
		if err != nil {
			return nil, inField(err, key)
		}
		s.Fields[key] = v
	}
}
