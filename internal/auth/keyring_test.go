package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeyring(t *testing.T) {
	t.Parallel()
	betaDigest := sha256.Sum256([]byte("beta-key"))
	k, err := NewKeyring([]Key{{Key: "alpha"}, {Key: "sha256:" + hex.EncodeToString(betaDigest[:])}})
	require.NoError(t, err)
	assert.True(t, k.Enabled())
	for auth, want := range map[string]bool{
		"NIRMATA-API alpha":     true,
		"Bearer beta-key":       true,
		"bearer  beta-key ":     true,
		"nirmata-api alpha":     true,
		"NIRMATA-API alph":      false,
		"NIRMATA-API alphaX":    false,
		"Basic alpha":           false,
		"alpha":                 false,
		"":                      false,
		"Bearer ":               false,
		"NIRMATA-API gamma":     false,
		"Bearer alpha,beta-key": false,
		"Bearer sha256:" + hex.EncodeToString(betaDigest[:]): false, // the digest is not the key
	} {
		id, ok := k.Check([]string{auth})
		assert.Equal(t, want, ok, "%q", auth)
		if ok {
			assert.Len(t, id, 8)
			assert.NotContains(t, auth, id, "the identity is not the key")
		}
	}
	id1, _ := k.Check([]string{"Bearer alpha"})
	id2, _ := k.Check([]string{"Bearer beta-key"})
	assert.NotEqual(t, id1, id2)
	assert.Equal(t, hex.EncodeToString(betaDigest[:4]), id2)

	// One value per call: a right key among others is still a refusal.
	_, ok := k.Check([]string{"Bearer wrong", "Bearer alpha"})
	assert.False(t, ok)
	_, ok = k.Check(nil)
	assert.False(t, ok)

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
	k, err := NewKeyring([]Key{{Name: "ci", Key: "ci-key"}, {Key: "plain"}, {Key: "plain"}})
	require.NoError(t, err)
	id, ok := k.Check([]string{"Bearer ci-key"})
	assert.True(t, ok)
	assert.Equal(t, "ci", id)
	plain := sha256.Sum256([]byte("plain"))
	id, ok = k.Check([]string{"Bearer plain"})
	assert.True(t, ok)
	assert.Equal(t, hex.EncodeToString(plain[:4]), id)
	assert.Equal(t, id, ID("", plain))

	_, err = NewKeyring([]Key{{Key: "plain"}, {Name: "ci", Key: "sha256:" + hex.EncodeToString(plain[:])}})
	assert.EqualError(t, err, `the keys going by "`+ID("", plain)+`" and "ci" are the same key; give each key once`)
	_, err = NewKeyring([]Key{{Name: "ci", Key: "a"}, {Name: "ci", Key: "b"}})
	assert.EqualError(t, err, `two keys go by "ci"; name one of them`)
	_, err = NewKeyring([]Key{{Key: "plain"}, {Name: ID("", plain), Key: "other"}})
	assert.EqualError(t, err, `two keys go by "`+ID("", plain)+`"; name one of them`)
}
