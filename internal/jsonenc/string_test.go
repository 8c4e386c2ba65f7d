package jsonenc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"日本語 😀 <&>", `"日本語 😀 <&>"`},
		{"\"\\/", `"\"\\/"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"bad\xffutf8\xc3", "\"bad\uFFFDutf8\uFFFD\""},
		{"\xed\xa0\x80", "\"\uFFFD\uFFFD\uFFFD\""}, // an encoded surrogate is not UTF-8
		{"é\u00e9\U0010FFFF", "\"éé\U0010FFFF\""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, string(AppendString(nil, tt.in)), "AppendString(%q)", tt.in)
	}
}

// FuzzAppendString checks AppendString against encoding/json: for valid UTF-8 the bytes
// are those of an HTML-unescaped json.Encoder (which also escapes U+2028/U+2029), and for
// any input the output is JSON that reads back as the input with bad bytes replaced.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "日本語 😀 <&>", "\x00\n\"\\", "\u2028", "\xff\xfe", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "%q", got)
		require.True(t, utf8.Valid(got))
		require.Equal(t, replaceBadBytes(s), back)
		if utf8.ValidString(s) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(s))
			require.Equal(t, strings.TrimSuffix(buf.String(), "\n"), string(got))
		}
	})
}

// replaceBadBytes replaces each byte that is not part of valid UTF-8 by U+FFFD, one for one.
func replaceBadBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
