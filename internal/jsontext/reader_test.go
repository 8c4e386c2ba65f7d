package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// FuzzReader holds Reader to encoding/json: walking a text with Peek, the Read methods,
// NextKey and NextElem succeeds exactly when json.Valid does (inputs nested deeper than
// MaxDepth aside), and then gives the tokens of json.Decoder, strings and keys decoded
// alike (escapes, surrogates, invalid UTF-8); ReadValue gives the text as written.
func FuzzReader(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":1,"b" :2, "c":{"\u0064":"\ud800"},"e\u0301":["x\xffy"],"":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var r Reader
		r.Reset(in)
		got, err := readTokens(&r, nil)
		if errors.Is(err, errMoreAndError) {
			t.Fatalf("reading %q: %v", in, err)
		}
		if err == nil {
			err = r.End()
		}
		var depthErr *DepthError
		if errors.As(err, &depthErr) {
			return // nested beyond MaxDepth: refused here, maybe accepted by encoding/json
		}
		if valid := json.Valid(in); valid != (err == nil) {
			t.Fatalf("reading %q: err = %v, json.Valid = %v", in, err, valid)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var want []any
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("json.Valid(%q) but Token: %v", in, err)
			}
			want = append(want, tok)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tokens of %q:\n got %#v\nwant %#v", in, got, want)
		}
		r.Reset(in)
		if raw, err := r.ReadValue(); err != nil || !bytes.Equal(raw, bytes.Trim(in, " \t\r\n")) {
			t.Fatalf("ReadValue(%q) = %q, %v", in, raw, err)
		}
	})
}

// errMoreAndError is NextElem or NextKey going on despite an error.
var errMoreAndError = errors.New("more=true with an error")

// readTokens appends the tokens of the next value, as json.Decoder's Token returns them.
func readTokens(r *Reader, toks []any) ([]any, error) {
	switch r.Peek() {
	case KindNull:
		return append(toks, nil), r.ReadNull()
	case KindBool:
		b, err := r.ReadBool()
		return append(toks, b), err
	case KindNumber:
		n, err := r.ReadNumber()
		return append(toks, json.Number(n)), err
	case KindString:
		s, err := r.ReadString()
		return append(toks, string(s)), err
	case KindArray:
		if err := r.Enter(); err != nil {
			return toks, err
		}
		toks = append(toks, json.Delim('['))
		for first := true; ; first = false {
			more, err := r.NextElem(first)
			if err != nil && more {
				return toks, errMoreAndError
			}
			if err != nil {
				return toks, err
			}
			if !more {
				return append(toks, json.Delim(']')), nil
			}
			if toks, err = readTokens(r, toks); err != nil {
				return toks, err
			}
		}
	case KindObject:
		if err := r.Enter(); err != nil {
			return toks, err
		}
		toks = append(toks, json.Delim('{'))
		for first := true; ; first = false {
			key, more, err := r.NextKey(first)
			if err != nil && more {
				return toks, errMoreAndError
			}
			if err != nil {
				return toks, err
			}
			if !more {
				return append(toks, json.Delim('}')), nil
			}
			toks = append(toks, string(key))
			if toks, err = readTokens(r, toks); err != nil {
				return toks, err
			}
		}
	default:
		return toks, r.ValueError()
	}
}

// TestReadValue: ReadValue returns one value as written, inner whitespace and invalid
// UTF-8 included, aliasing the input; the Reader goes on after it.
func TestReadValue(t *testing.T) {
	t.Parallel()
	in := []byte("{\"a\": [ 1, \"x\xff\\n\" ] , \"b\":2}")
	var r Reader
	r.Reset(in)
	if r.Peek() != KindObject || r.Enter() != nil {
		t.Fatal("want an object")
	}
	if key, more, err := r.NextKey(true); err != nil || !more || string(key) != "a" {
		t.Fatalf("NextKey = %q, %v, %v", key, more, err)
	}
	raw, err := r.ReadValue()
	if err != nil || string(raw) != "[ 1, \"x\xff\\n\" ]" {
		t.Fatalf("ReadValue = %q, %v", raw, err)
	}
	if &raw[0] != &in[6] {
		t.Error("ReadValue copied the text")
	}
	if key, more, err := r.NextKey(false); err != nil || !more || string(key) != "b" {
		t.Fatalf("NextKey = %q, %v, %v", key, more, err)
	}
	if raw, err := r.ReadValue(); err != nil || string(raw) != "2" {
		t.Fatalf("ReadValue = %q, %v", raw, err)
	}
	if _, more, err := r.NextKey(false); err != nil || more {
		t.Fatalf("NextKey at '}' = %v, %v", more, err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}

	for in, want := range map[string]string{
		`[1,`:                           "unexpected end of input at byte 3",
		`{"a" 1}`:                       "invalid character '1' after object key (want ':') at byte 5",
		strings.Repeat("[", MaxDepth+1): "nests deeper than 1000 levels at byte 1000",
	} {
		r.Reset([]byte(in))
		if raw, err := r.ReadValue(); raw != nil || errText(err) != want {
			t.Errorf("ReadValue(%.20q) = %q, %v; want error %q", in, raw, err, want)
		}
	}
}
