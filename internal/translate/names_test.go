package translate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"get_weather":           true,
		"a-b_C9":                true,
		"-":                     true,
		strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false,
		"":                      false,
		"fs.read":               false,
		"call:1":                false,
		"has space":             false,
		"日本":                    false,
	}
	for in, want := range tests {
		assert.Equal(t, want, validName(in), "%q", in)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "fs_read_file", sanitize("fs.read_file"))
	assert.Equal(t, "a_b", sanitize("a日b"), "one _ per rune")
	assert.Equal(t, "__", sanitize("\xff\xfe"), "invalid UTF-8 bytes are replaced one by one")
	assert.Len(t, sanitize(strings.Repeat("x.", 100)), maxNameLen)
}

// TestAllocator: valid names are kept, substitutes are valid, unique, readable when they
// can be, and never take a name the client uses validly elsewhere.
func TestAllocator(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 70)
	inputs := []string{"fs.read", "fs:read", "fs_read", long + "_a", long + "_b", "ok", "ok", "日本語", ""}

	var a allocator
	for _, s := range inputs {
		a.reserve(s)
	}
	got := make([]string, len(inputs))
	seen := map[string]bool{}
	for i, s := range inputs {
		got[i] = a.take(s, i)
		assert.True(t, validName(got[i]), "%q → %q", s, got[i])
		assert.False(t, seen[got[i]], "%q handed out twice", got[i])
		seen[got[i]] = true
	}
	assert.Equal(t, "fs_read", got[2], "a valid name keeps itself even when an invalid one sanitizes to it")
	assert.NotEqual(t, "fs_read", got[0])
	assert.True(t, strings.HasPrefix(got[0], "fs_read_"), got[0])
	assert.True(t, strings.HasPrefix(got[1], "fs_read_"), got[1])
	assert.Equal(t, long[:maxNameLen], got[3], "a long name is cut when that collides with nothing")
	assert.Len(t, got[4], maxNameLen)
	assert.Equal(t, "ok", got[5])
	assert.NotEqual(t, "ok", got[6], "a second use of an id gets a fresh one")
	assert.Equal(t, "___", got[7])
	assert.Len(t, got[8], 8, "an empty string gets the hash alone")

	// Same inputs, same outputs.
	var b allocator
	for _, s := range inputs {
		b.reserve(s)
	}
	for i, s := range inputs {
		assert.Equal(t, got[i], b.take(s, i))
	}
}

func TestNamesNil(t *testing.T) {
	t.Parallel()
	var n *Plan
	assert.Equal(t, "x.y", n.ToolName("x.y"))
	assert.Equal(t, "id", n.ToolCallID("id"))
}
