package clip

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestString(t *testing.T) {
	assert.Equal(t, "abc", String("abc", 3))
	assert.Equal(t, "ab…", String("abcd", 2))
	// Never cuts a rune in two: "é" is two bytes.
	got := String("aé", 2)
	assert.Equal(t, "a…", got)
	assert.True(t, utf8.ValidString(got))
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `"auto"`, Quote("auto"))
	long := strings.Repeat("9", 5_000_000)
	got := Quote(long)
	assert.Equal(t, `"`+strings.Repeat("9", QuoteMax)+`…" (5000000 bytes)`, got)
	// Control characters are escaped, as %q does.
	assert.Equal(t, `"a\nb"`, Quote("a\nb"))
}

func TestMessage(t *testing.T) {
	assert.Equal(t, "plain message", Message("plain message"))
	assert.Equal(t, "a b ? c", Message("a\nb \xff c"))
	long := Message(strings.Repeat("x", 10_000))
	assert.LessOrEqual(t, len(long), MessageMax+len("…"))
}
