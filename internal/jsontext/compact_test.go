package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// seeds are the corpus of FuzzCompact and the inputs TestCompactMatchesEncodingJSON runs:
// every kind of value, escapes, surrogates, number spellings, and the ways text fails to
// be JSON.
var seeds = []string{
	// Values of every kind, alone and nested.
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `0.1`, `-0.0`, `1e+10`, `1E-7`, `1e999`, `-0.0E+1`,
	`12345678901234567890`, `3.141592653589793238462643383279`, `""`, `"x"`, `[]`, `{}`,
	`[1,"a",true,false,null,{},[]]`, `{"a":{"b":[{"c":null}]}}`, `[[[[[[[[[[]]]]]]]]]]`,
	`{"a":1,"a":2}`, `{"":""}`,
	// Strings: every escape, surrogates, raw non-ASCII, DEL, and invalid UTF-8.
	`"\" \\ \/ \b \f \n \r \t"`, `"\u0000\u001f\u00e9\uFFFF\uabcd"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`,
	`"日本語 <&> \u2028"`, "\"\u2028\u2029\x7f\"", "\"\xff\xfe\"", "\"a\xc3\"", "\"\xed\xa0\x80\"", "{\"\xff\":\"\xc0\xaf\"}",
	// Whitespace everywhere, and inside strings where it is kept.
	" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } , \"c\" : \" x \\\" } \" }\n\t ",
	"[ ]", "{ }", "[\n1\n,\n2\n]", ` "a b" `, " 1 ", " -0.5e-3 ",
	// Not JSON: empty, leading zeros, bad numbers, trailing commas, missing separators.
	``, ` `, `01`, `-01`, `00`, `-`, `-a`, `+1`, `.5`, `1.`, `1.e5`, `1e`, `1e+`, `1E-`, `0x10`, `1_000`, `Infinity`, `NaN`,
	`[1,]`, `{"a":1,}`, `[,1]`, `{,}`, `[1 2]`, `{"a" 1}`, `{"a":1 "b":2}`, `{a:1}`, `{'a':1}`, `{"a"}`, `{1:2}`,
	`[1]]`, `{}}`, `1 2`, `{} {}`, `nul`, `nulll`, `tru`, `True`, `fals`, `falsey`, `nullx`,
	// Not JSON: control characters, bad escapes, truncation.
	"\"a\nb\"", "\"\t\"", "\"\x00\"", `"\x"`, `"\u12G4"`, `"\u123"`, `"\U0041"`, `"\'"`, `"abc`, `"\`, `"\u`,
	`[`, `{`, `{"a"`, `{"a":`, `{"a":1`, `[1,`, `[1`, `"a`,
	// Not JSON: bytes outside strings.
	"\xef\xbb\xbf{}", "\xff", "[1,\xff]", "{\"a\":1}\x00", "\x00", "\u00a0{}", "{}\u3000",
}

// FuzzCompact holds Compact to encoding/json: it succeeds exactly when json.Valid does
// (inputs nested deeper than MaxDepth aside), its output is json.Compact's byte for byte,
// compacting in place gives the same, and Validate agrees with it.
func FuzzCompact(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)))
	f.Add([]byte(strings.Repeat(`{"a":[`, MaxDepth/2) + "1" + strings.Repeat("]}", MaxDepth/2)))
	f.Add([]byte(strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)))
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		got, err := Compact([]byte("prefix"), in)
		if !bytes.Equal(in, orig) {
			t.Fatalf("Compact changed its input %q to %q", orig, in)
		}
		if verr := Validate(in); errText(verr) != errText(err) {
			t.Fatalf("Validate(%q) = %v, Compact gave %v", in, verr, err)
		}
		inPlace := bytes.Clone(in)
		gotInPlace, errInPlace := Compact(inPlace[:0], inPlace)
		if errText(errInPlace) != errText(err) {
			t.Fatalf("in place: Compact(%q) = %v, want %v", in, errInPlace, err)
		}
		var depthErr *DepthError
		if errors.As(err, &depthErr) {
			return // nested beyond MaxDepth: refused here, maybe accepted by encoding/json
		}
		if valid := json.Valid(in); valid != (err == nil) {
			t.Fatalf("Compact(%q): err = %v, json.Valid = %v", in, err, valid)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(in) {
				t.Fatalf("Compact(%q): error %#v is no SyntaxError within the input", in, err)
			}
			if string(got) != "prefix" {
				t.Fatalf("Compact(%q) failed but changed dst to %q", in, got)
			}
			return
		}
		var want bytes.Buffer
		want.WriteString("prefix")
		if err := json.Compact(&want, in); err != nil {
			t.Fatalf("json.Valid(%q) but json.Compact: %v", in, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("Compact(%q) = %q, json.Compact gives %q", in, got, want.Bytes())
		}
		if !bytes.Equal(gotInPlace, want.Bytes()[len("prefix"):]) {
			t.Fatalf("in place: Compact(%q) = %q, want %q", in, gotInPlace, want.Bytes()[len("prefix"):])
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCompactMatchesEncodingJSON runs the fuzz corpus as a test: the seeds hold many
// invalid inputs, and go test runs them only through FuzzCompact's seed corpus when the
// fuzz target is selected.
func TestCompactMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		got, err := Compact(nil, []byte(s))
		if valid := json.Valid([]byte(s)); valid != (err == nil) {
			t.Errorf("Compact(%q): err = %v, json.Valid = %v", s, err, valid)
			continue
		}
		if err == nil {
			var want bytes.Buffer
			_ = json.Compact(&want, []byte(s))
			if string(got) != want.String() {
				t.Errorf("Compact(%q) = %q, want %q", s, got, want.String())
			}
		}
	}
}

func TestCompact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{}`, `{}`},
		{" { \"a\" : [ 1 , 2.50 , -0 , 1E+2 ] ,\n\t\"b\" : null }\r\n", `{"a":[1,2.50,-0,1E+2],"b":null}`},
		{`{"n":12345678901234567890,"m":0.1}`, `{"n":12345678901234567890,"m":0.1}`},
		{`"  a \" b  "`, `"  a \" b  "`},
		{`{"typ\u0065" : "\ud83d\ude00 \/ <&>"}`, `{"typ\u0065":"\ud83d\ude00 \/ <&>"}`},
		{"[ \"\xff\" ]", "[\"\xff\"]"},
		{"\"\u2028\"", "\"\u2028\""},
	}
	for _, tt := range tests {
		got, err := Compact(nil, []byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Compact(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		b := []byte(tt.in)
		got, err = Compact(b[:0], b)
		if err != nil || string(got) != tt.want {
			t.Errorf("in place: Compact(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestCompactErrors pins the messages and offsets: the offset is the offending byte, or
// the input's length when it ends too early.
func TestCompactErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{``, "unexpected end of input at byte 0"},
		{`   `, "unexpected end of input at byte 3"},
		{`{"a":1`, "unexpected end of input at byte 6"},
		{`{"a":"x`, "unexpected end of input at byte 7"},
		{`"\`, "unexpected end of input at byte 2"},
		{`tru`, "unexpected end of input at byte 3"},
		{`[1,`, "unexpected end of input at byte 3"},
		{`  x`, "invalid character 'x' looking for beginning of value at byte 2"},
		{`[1,]`, "invalid character ']' looking for beginning of value at byte 3"},
		{`{"a":1,}`, "invalid character '}' looking for beginning of object key string at byte 7"},
		{`{"a" 1}`, "invalid character '1' after object key (want ':') at byte 5"},
		{`{"a":1 "b":2}`, "invalid character '\"' after object member (want ',' or '}') at byte 7"},
		{`[1 2]`, "invalid character '2' after array element (want ',' or ']') at byte 3"},
		{`{} {}`, "invalid character '{' after top-level value at byte 3"},
		{`01`, "invalid character '1' after top-level value at byte 1"},
		{`-`, "unexpected end of input at byte 1"},
		{`-a`, "invalid character 'a' in numeric literal at byte 1"},
		{`1.x`, "invalid character 'x' after decimal point in numeric literal at byte 2"},
		{`1e+}`, "invalid character '}' in exponent of numeric literal at byte 3"},
		{`nuLl`, "invalid character 'L' in literal null at byte 2"},
		{`"\x"`, "invalid character 'x' in string escape code at byte 2"},
		{`"\u12G4"`, "invalid character 'G' in \\u escape at byte 5"},
		{"\"a\tb\"", "invalid character 0x09 in string literal at byte 2"},
		{"\xef\xbb\xbf{}", "invalid character 0xef looking for beginning of value at byte 0"},
	}
	for _, tt := range tests {
		dst := []byte("kept")
		got, err := Compact(dst, []byte(tt.in))
		var se *SyntaxError
		if !errors.As(err, &se) || err.Error() != tt.want {
			t.Errorf("Compact(%q) error = %#v, want %q", tt.in, err, tt.want)
		}
		if string(got) != "kept" {
			t.Errorf("Compact(%q) failed but returned dst %q", tt.in, got)
		}
		if err := Validate([]byte(tt.in)); errText(err) != tt.want {
			t.Errorf("Validate(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

// TestCompactDepth: MaxDepth levels are read, one more is a DepthError at its bracket.
func TestCompactDepth(t *testing.T) {
	t.Parallel()
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Compact(nil, []byte(ok)); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	deep := `{"a":` + strings.Repeat("[", MaxDepth)
	_, err := Compact(nil, []byte(deep))
	var de *DepthError
	if !errors.As(err, &de) || err.Error() != "nests deeper than 1000 levels at byte 1004" {
		t.Fatalf("too deep: %#v", err)
	}
	if err := Validate([]byte(deep)); errText(err) != "nests deeper than 1000 levels at byte 1004" {
		t.Fatalf("Validate too deep: %v", err)
	}
}

// TestReaderCompactValue: CompactValue inside a document compacts one value, replaces
// invalid UTF-8, and is not clobbered by keys with escapes (which ReadString decodes into
// the same scratch buffer).
func TestReaderCompactValue(t *testing.T) {
	t.Parallel()
	var r Reader
	r.Reset([]byte("{ \"k\\u0065y\" : { \"a\\n\" : [ 1 , \"x\xff\" ] } , \"n\" : 1 }"))
	if r.Peek() != KindObject {
		t.Fatal("want an object")
	}
	if err := r.Enter(); err != nil {
		t.Fatal(err)
	}
	key, more, err := r.NextKey(true)
	if err != nil || !more || string(key) != "key" {
		t.Fatalf("NextKey = %q, %v, %v", key, more, err)
	}
	got, err := r.CompactValue()
	if err != nil || got != "{\"a\\n\":[1,\"x\uFFFD\"]}" {
		t.Fatalf("CompactValue = %q, %v", got, err)
	}
	key, more, err = r.NextKey(false)
	if err != nil || !more || string(key) != "n" {
		t.Fatalf("NextKey = %q, %v, %v", key, more, err)
	}
	if raw, err := r.RawValue(); err != nil || raw != "1" {
		t.Fatalf("RawValue = %q, %v", raw, err)
	}
	if _, more, err = r.NextKey(false); err != nil || more {
		t.Fatalf("NextKey at '}' = %v, %v", more, err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
}

// schema is a realistic tool schema of about 500 bytes, compact as the REST decoder hands
// it to the translator.
const schema = `{"type":"object","properties":{"path":{"type":"string","description":"Path of the file, relative to the repository root","pattern":"^[^/].*\\.ya?ml$"},` +
	`"content":{"type":"string","description":"The complete YAML text to write"},"mode":{"type":"integer","minimum":0,"maximum":511,"default":420},` +
	`"overwrite":{"type":"boolean","default":false},"labels":{"type":"array","items":{"type":"string","enum":["app.kubernetes.io/name","team","tier"]},"uniqueItems":true},` +
	`"owner":{"type":["string","null"],"maxLength":64}},"required":["path","content"],"additionalProperties":false}`

// BenchmarkCompact compares Compact with what the translator did before:
// json.Valid then json.Compact, on a compact schema and on the same schema indented.
func BenchmarkCompact(b *testing.B) {
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(schema), "", "  "); err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name string
		src  []byte
	}{{"schema", []byte(schema)}, {"indented", indented.Bytes()}} {
		b.Run("jsontext/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.src)))
			dst := make([]byte, 0, len(in.src))
			for b.Loop() {
				var err error
				if dst, err = Compact(dst[:0], in.src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encoding_json/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.src)))
			var dst bytes.Buffer
			dst.Grow(len(in.src))
			for b.Loop() {
				if !json.Valid(in.src) {
					b.Fatal("invalid")
				}
				dst.Reset()
				if err := json.Compact(&dst, in.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
