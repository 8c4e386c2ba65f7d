package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// keyring holds the accepted client keys as SHA-256 digests, so every comparison is
// between equal-length values and takes the same time whatever the key.
type keyring struct {
	digests [][sha256.Size]byte
}

func newKeyring(keys []string) *keyring {
	k := &keyring{}
	for _, key := range keys {
		k.digests = append(k.digests, sha256.Sum256([]byte(key)))
	}
	return k
}

// enabled reports whether keys are configured; with none, auth is off.
func (k *keyring) enabled() bool { return len(k.digests) > 0 }

// allows checks an Authorization value: "NIRMATA-API <key>" or "Bearer <key>". Every
// configured key is compared, without an early exit.
func (k *keyring) allows(authorization string) bool {
	scheme, key, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || (!strings.EqualFold(scheme, "NIRMATA-API") && !strings.EqualFold(scheme, "Bearer")) {
		return false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(key)))
	match := 0
	for i := range k.digests {
		match |= subtle.ConstantTimeCompare(d[:], k.digests[i][:])
	}
	return match == 1
}
