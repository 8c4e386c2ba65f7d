package translate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolInput: arguments are validated and compacted, never decoded; the error text is
// completed by the caller's path.
func TestToolInput(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, err string }{
		{in: "", want: `{}`},
		{in: " \n ", want: `{}`},
		{in: "{ \"n\" : 12345678901234567890 , \"s\" : \" a \\u0020 \" }", want: `{"n":12345678901234567890,"s":" a \u0020 "}`},
		{in: `{"a":`, err: "is not valid JSON: unexpected end of input at byte 5"},
		{in: `{"a":1,}`, err: "is not valid JSON: invalid character '}' at start of string (expecting '\"') at byte 7"},
		{in: `[1]`, err: "must be a JSON object, not an array"},
		{in: "{\"a\":\"\xff\"}", err: "is not valid UTF-8"},
		{in: `{"a":` + strings.Repeat("[", 10000), err: "nests deeper than 10000 levels at byte 10004"},
	}
	for _, tt := range tests {
		got, err := toolInput(tt.in)
		if tt.err != "" {
			assert.EqualError(t, err, tt.err, "%.40q", tt.in)
			continue
		}
		require.NoError(t, err, "%q", tt.in)
		assert.Equal(t, tt.want, string(got), "%q", tt.in)
	}
}

// TestJSONObject: a tool result is JSON only when it is one valid object.
func TestJSONObject(t *testing.T) {
	t.Parallel()
	got, ok := jsonObject(" { \"a\" : [ 1 , 2 ] }\n")
	assert.True(t, ok)
	assert.Equal(t, `{"a":[1,2]}`, string(got))
	for _, in := range []string{`[1]`, `{"a":1} x`, `{"a"`, "{\"a\":\"\xff\"}", `written 1.2 KB`} {
		_, ok := jsonObject(in)
		assert.False(t, ok, "%q", in)
	}
}
