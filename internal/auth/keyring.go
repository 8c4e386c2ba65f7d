// Package auth holds the gateway's client keys (docs/PROTOCOL.md 2) and checks the
// Authorization values of calls against them, on every transport.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// Keyring holds the accepted client keys as SHA-256 digests, so every comparison is
// between equal-length values and takes the same time whatever the key, and a keys file
// may hold digests instead of keys.
type Keyring struct {
	digests [][sha256.Size]byte
}

// NewKeyring takes keys as written in the configuration: the key itself, or
// "sha256:<hex>" of it. No keys turns authentication off.
func NewKeyring(keys []string) (*Keyring, error) {
	k := &Keyring{}
	for i, key := range keys {
		if key = strings.TrimSpace(key); key == "" {
			continue
		}
		if h, ok := strings.CutPrefix(key, "sha256:"); ok {
			b, err := hex.DecodeString(strings.TrimSpace(h))
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("api key %d: sha256: wants 64 hex digits", i+1)
			}
			k.digests = append(k.digests, [sha256.Size]byte(b))
			continue
		}
		k.digests = append(k.digests, sha256.Sum256([]byte(key)))
	}
	return k, nil
}

// Enabled reports whether keys are configured; with none, auth is off.
func (k *Keyring) Enabled() bool { return k != nil && len(k.digests) > 0 }

// Check verifies the Authorization values of one call: exactly one is allowed, so a
// caller cannot try many keys in one request.
func (k *Keyring) Check(values []string) (keyID string, ok bool) {
	if len(values) != 1 {
		return "", false
	}
	return k.check(values[0])
}

// check verifies an Authorization value, "NIRMATA-API <key>" or "Bearer <key>", comparing
// every configured key without an early exit. On success it returns the key's identity:
// the first 8 hex digits of its SHA-256, safe to log.
func (k *Keyring) check(authorization string) (keyID string, ok bool) {
	scheme, key, found := strings.Cut(strings.TrimSpace(authorization), " ")
	if !found || (!strings.EqualFold(scheme, "NIRMATA-API") && !strings.EqualFold(scheme, "Bearer")) {
		return "", false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(key)))
	match := 0
	for i := range k.digests {
		match |= subtle.ConstantTimeCompare(d[:], k.digests[i][:])
	}
	if match != 1 {
		return "", false
	}
	return hex.EncodeToString(d[:4]), true
}
