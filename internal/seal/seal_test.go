package seal

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
)

var blocks = []chat.ReasoningBlock{
	{Text: "Let me think: \"quoted\", ünïcode, \x00 and all.", Signature: "c2lnbmF0dXJl+/="},
	{Redacted: true, Data: "cmVkYWN0ZWQ="},
	{Text: "", Signature: "b25seS1zaWc="}, // Opus 4.7's empty text with a signature
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeyBytes) }

// TestSealOpens: a value opens to the blocks byte for byte and the model they came from,
// for the key id it was sealed for, and says nothing readable of them.
func TestSealOpens(t *testing.T) {
	t.Parallel()
	s, err := New(key(1))
	require.NoError(t, err)
	v := s.Seal("key-a", "anthropic.claude-sonnet-4-5-20250929-v1:0", blocks)
	assert.NotContains(t, v, "think")
	raw, err := base64.RawURLEncoding.DecodeString(v)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "think", "the blocks are encrypted")
	model, got, err := s.Open("key-a", v)
	require.NoError(t, err)
	assert.Equal(t, "anthropic.claude-sonnet-4-5-20250929-v1:0", model)
	assert.Equal(t, blocks, got)
	assert.NotEqual(t, v, s.Seal("key-a", model, blocks), "a fresh nonce for every value")
}

// TestRotation: a Sealer seals with its first key and opens with all of them, so the
// values sealed before a new key was put first stay readable; a key that was dropped no
// longer opens its values.
func TestRotation(t *testing.T) {
	t.Parallel()
	old, err := New(key(1))
	require.NoError(t, err)
	v := old.Seal("k", "m", blocks)
	rotated, err := New(key(2), key(1))
	require.NoError(t, err)
	_, got, err := rotated.Open("k", v)
	require.NoError(t, err)
	assert.Equal(t, blocks, got)
	_, _, err = old.Open("k", rotated.Seal("k", "m", blocks))
	assert.ErrorIs(t, err, ErrUnknownKey, "sealed with the new key, which the old gateway lacks")
	retired, err := New(key(2))
	require.NoError(t, err)
	_, _, err = retired.Open("k", v)
	assert.ErrorIs(t, err, ErrUnknownKey)
}

// TestOpenRefuses: a value for another caller's key, one changed anywhere, one of another
// version, garbage and one over the bound do not open, each with its error.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	s, err := New(key(1))
	require.NoError(t, err)
	v := s.Seal("key-a", "m", blocks)
	_, _, err = s.Open("key-b", v)
	assert.ErrorIs(t, err, ErrOpen, "another caller's key")

	raw, _ := base64.RawURLEncoding.DecodeString(v)
	for i := header; i < len(raw); i += 7 {
		changed := bytes.Clone(raw)
		changed[i] ^= 1
		_, _, err = s.Open("key-a", base64.RawURLEncoding.EncodeToString(changed))
		assert.ErrorIs(t, err, ErrOpen, "byte %d changed", i)
	}
	changed := bytes.Clone(raw)
	changed[0] = 2
	_, _, err = s.Open("key-a", base64.RawURLEncoding.EncodeToString(changed))
	assert.ErrorIs(t, err, ErrMalformed, "another version")
	changed = bytes.Clone(raw)
	changed[1] ^= 1
	_, _, err = s.Open("key-a", base64.RawURLEncoding.EncodeToString(changed))
	assert.ErrorIs(t, err, ErrUnknownKey, "another key id")

	for _, bad := range []string{"", "not base64!", "AQ", base64.RawURLEncoding.EncodeToString([]byte("gAAAAABo-openai-style"))} {
		_, _, err = s.Open("key-a", bad)
		assert.ErrorIs(t, err, ErrMalformed, "%q", bad)
	}
	_, _, err = s.Open("key-a", strings.Repeat("A", MaxValueBytes+1))
	assert.ErrorIs(t, err, ErrTooLarge)
}

// TestParseKey: a key is 64 hex digits or base64 of 32 bytes; errors do not quote it.
func TestParseKey(t *testing.T) {
	t.Parallel()
	want := key(0xab)
	for _, text := range []string{strings.Repeat("ab", KeyBytes), base64.StdEncoding.EncodeToString(want),
		base64.RawURLEncoding.EncodeToString(want), " " + base64.StdEncoding.EncodeToString(want) + "\n"} {
		got, err := ParseKey(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, got)
	}
	_, err := ParseKey(base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key")))
	assert.EqualError(t, err, "decodes to 16 bytes; want 32 (openssl rand -base64 32)")
	_, err = ParseKey("secret-password!")
	assert.EqualError(t, err, "is neither 64 hex digits nor base64 of 32 bytes (openssl rand -base64 32)")
	_, err = New([]byte("short"))
	assert.EqualError(t, err, "key 0 has 5 bytes; want 32")
}

// TestRandom: a random Sealer opens its own values; two do not open each other's.
func TestRandom(t *testing.T) {
	t.Parallel()
	a, b := Random(), Random()
	v := a.Seal("k", "m", blocks)
	_, got, err := a.Open("k", v)
	require.NoError(t, err)
	assert.Equal(t, blocks, got)
	_, _, err = b.Open("k", v)
	assert.ErrorIs(t, err, ErrUnknownKey)
}

// BenchmarkSealOpen: one turn's reasoning (4 KiB of thinking and its signature) sealed,
// then opened, as one Codex tool turn costs the gateway.
func BenchmarkSealOpen(b *testing.B) {
	s, err := New(key(1))
	require.NoError(b, err)
	turn := []chat.ReasoningBlock{{Text: strings.Repeat("reasoning ", 410), Signature: strings.Repeat("c2ln", 100)}}
	b.ReportAllocs()
	for b.Loop() {
		v := s.Seal("key-a", "anthropic.claude-sonnet-4-5-20250929-v1:0", turn)
		if _, _, err := s.Open("key-a", v); err != nil {
			b.Fatal(err)
		}
	}
}
