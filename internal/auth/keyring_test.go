package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alpha and plainKey are keys of the keyring tests, each MinKeyLength characters or more.
const (
	alpha    = "alpha-key-0123456789"
	plainKey = "plain-key-0123456789"
)

func TestKeyring(t *testing.T) {
	t.Parallel()
	betaDigest := sha256.Sum256([]byte("beta-key-0123456789"))
	k, err := NewKeyring([]Key{{Key: alpha}, {Key: "sha256:" + hex.EncodeToString(betaDigest[:])}})
	require.NoError(t, err)
	assert.True(t, k.Enabled())
	for auth, want := range map[string]bool{
		"NIRMATA-API " + alpha:                true,
		"Bearer beta-key-0123456789":          true,
		"bearer  beta-key-0123456789 ":        true,
		"nirmata-api " + alpha:                true,
		"NIRMATA-API " + alpha[:len(alpha)-1]: false,
		"NIRMATA-API " + alpha + "X":          false,
		"Basic " + alpha:                      false,
		alpha:                                 false,
		"":                                    false,
		"Bearer ":                             false,
		"NIRMATA-API gamma-key-0123456789":    false,
		"Bearer " + alpha + ",beta-key-0123456789":           false,
		"Bearer sha256:" + hex.EncodeToString(betaDigest[:]): false, // the digest is not the key
	} {
		id, ok := k.Check([]string{auth})
		assert.Equal(t, want, ok, "%q", auth)
		if ok {
			assert.Len(t, id, 8)
			assert.NotContains(t, auth, id, "the identity is not the key")
		}
	}
	id1, _ := k.Check([]string{"Bearer " + alpha})
	id2, _ := k.Check([]string{"Bearer beta-key-0123456789"})
	assert.NotEqual(t, id1, id2)
	assert.Equal(t, hex.EncodeToString(betaDigest[:4]), id2)

	// One value per call: a right key among others is still a refusal.
	_, ok := k.Check([]string{"Bearer wrong", "Bearer " + alpha})
	assert.False(t, ok)
	_, ok = k.Check(nil)
	assert.False(t, ok)

	// x-api-key (Anthropic's header) holds the bare key, one per call.
	id3, ok := k.CheckAPIKey([]string{alpha})
	assert.True(t, ok)
	assert.Equal(t, id1, id3, "the same key, the same identity, whichever header brought it")
	for _, values := range [][]string{nil, {""}, {"Bearer " + alpha}, {alpha, alpha}, {alpha + "X"}} {
		_, ok = k.CheckAPIKey(values)
		assert.False(t, ok, "%q", values)
	}

	off, err := NewKeyring(nil)
	require.NoError(t, err)
	assert.False(t, off.Enabled())
	_, err = NewKeyring([]Key{{Key: "sha256:xyz"}})
	assert.ErrorContains(t, err, "64 hex digits")
}

// TestNamedKeys: a named key goes by its name, an unnamed one by its digest's first 8 hex
// digits; one key given twice, or two keys going by one identity, is refused, except an
// unnamed key repeated (a keys file and --api-keys may list the same key).
func TestNamedKeys(t *testing.T) {
	t.Parallel()
	k, err := NewKeyring([]Key{{Name: "ci", Key: "ci-key-0123456789"}, {Key: plainKey}, {Key: plainKey}})
	require.NoError(t, err)
	id, ok := k.Check([]string{"Bearer ci-key-0123456789"})
	assert.True(t, ok)
	assert.Equal(t, "ci", id)
	plain := sha256.Sum256([]byte(plainKey))
	id, ok = k.Check([]string{"Bearer " + plainKey})
	assert.True(t, ok)
	assert.Equal(t, hex.EncodeToString(plain[:4]), id)
	assert.Equal(t, id, ID("", plain))

	_, err = NewKeyring([]Key{{Key: plainKey}, {Name: "ci", Key: "sha256:" + hex.EncodeToString(plain[:])}})
	assert.EqualError(t, err, `the keys going by "`+ID("", plain)+`" and "ci" are the same key; give each key once`)
	_, err = NewKeyring([]Key{{Name: "ci", Key: "a-key-0123456789"}, {Name: "ci", Key: "b-key-0123456789"}})
	assert.EqualError(t, err, `two keys go by "ci"; name one of them`)
	_, err = NewKeyring([]Key{{Key: plainKey}, {Name: ID("", plain), Key: "other-key-0123456789"}})
	assert.EqualError(t, err, `two keys go by "`+ID("", plain)+`"; name one of them`)
}

// TestShortKeysAreRefused: a key written as itself needs MinKeyLength characters (counted
// as characters, not bytes); a digest cannot be checked and passes. The error quotes no
// part of the key and says how to make one.
func TestShortKeysAreRefused(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"k", "fifteen-chars-k", "ключ-ключ-ключ"} { // the last: 14 characters, 26 bytes
		_, err := Digest(key)
		require.Error(t, err, key)
		assert.Equal(t, "shorter than 16 characters, so it can be guessed; make a key with: openssl rand -hex 32", err.Error())
		_, err = NewKeyring([]Key{{Key: alpha}, {Key: key}})
		assert.EqualError(t, err, "api key 2: shorter than 16 characters, so it can be guessed; make a key with: openssl rand -hex 32")
	}
	for _, key := range []string{"sixteen-chars-ok", "ключ-ключ-ключ-к", "sha256:" + hex.EncodeToString(make([]byte, sha256.Size))} {
		_, err := Digest(key)
		assert.NoError(t, err, key)
	}
}

// TestDigestsSpelledOtherwiseAreRefused: an entry meant as a digest but spelled otherwise
// than "sha256:" in lower case would be a plaintext key equal to the digest's text, which
// anyone reading the file could send; it is refused, naming no part of it.
func TestDigestsSpelledOtherwiseAreRefused(t *testing.T) {
	t.Parallel()
	digest := hex.EncodeToString(make([]byte, sha256.Size))
	for _, key := range []string{"SHA256:" + digest, "Sha256:" + digest, "sha-256:" + digest, "sha256=" + digest, "SHA-256 " + digest} {
		_, err := Digest(key)
		require.Error(t, err, key)
		assert.NotContains(t, err.Error(), digest[:8])
		assert.Contains(t, err.Error(), "looks like a digest")
	}
	for _, key := range []string{"sha256" + digest, "sha256-but-a-plain-key", "sha25:" + digest} { // plain keys that start alike
		_, err := Digest(key)
		assert.NoError(t, err, key)
	}
}
