// Package auth holds the gateway's client keys (docs/PROTOCOL.md 2) and checks the
// Authorization values of calls against them, on every transport.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Key is one accepted key as the configuration writes it: the key itself, or
// "sha256:<hex>" of it, and the name it goes by ("" for none: docs/PROTOCOL.md 14.1).
type Key struct {
	Name string
	Key  string
}

// Keyring holds the accepted client keys as SHA-256 digests, so every comparison is
// between equal-length values and takes the same time whatever the key, and a keys file
// may hold digests instead of keys.
type Keyring struct {
	digests [][sha256.Size]byte
	// ids[i] is the identity of the key of digests[i].
	ids []string
}

// MinKeyLength is the fewest characters a key written as itself may have: anyone who can
// reach the gateway may try keys, and a short one falls to guessing. A "sha256:<hex>" entry
// cannot be checked, as its digest hides the key's length.
const MinKeyLength = 16

// errShortKey names no key and no part of one: it reaches the terminal and the logs.
var errShortKey = fmt.Errorf("shorter than %d characters, so it can be guessed; make a key with: openssl rand -hex 32", MinKeyLength)

// Digest is the SHA-256 of a key as the configuration writes it: the key itself, at least
// MinKeyLength characters, or "sha256:<64 hex digits>" of it. Every source of keys passes
// through it, so this is the one place that decides what a key may be.
func Digest(key string) ([sha256.Size]byte, error) {
	if h, ok := strings.CutPrefix(key, "sha256:"); ok {
		b, err := hex.DecodeString(strings.TrimSpace(h))
		if err != nil || len(b) != sha256.Size {
			return [sha256.Size]byte{}, errors.New("sha256: wants 64 hex digits")
		}
		return [sha256.Size]byte(b), nil
	}
	if looksLikeDigest(key) {
		// "SHA256:…", "sha-256:…": meant as a digest, it would be a key anyone reading the
		// file could send as it is.
		return [sha256.Size]byte{}, errors.New(`looks like a digest but is not written "sha256:<64 hex digits>" (lower case); as it is, it would be a key whose text is its own digest`)
	}
	if utf8.RuneCountInString(key) < MinKeyLength {
		return [sha256.Size]byte{}, errShortKey
	}
	return sha256.Sum256([]byte(key)), nil
}

// looksLikeDigest reports whether a key starts as a digest would, in another spelling than
// "sha256:": sha256 or sha-256 in any case, then ':', '=' or a space.
func looksLikeDigest(key string) bool {
	rest, ok := cutPrefixFold(key, "sha256")
	if !ok {
		if rest, ok = cutPrefixFold(key, "sha-256"); !ok {
			return false
		}
	}
	return rest != "" && strings.ContainsRune(":= \t", rune(rest[0]))
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// ID is the identity a key goes by in logs, metrics, limits and Bedrock's requestMetadata:
// its name, else the first 8 hex digits of its SHA-256, which are safe to show.
func ID(name string, digest [sha256.Size]byte) string {
	if name != "" {
		return name
	}
	return hex.EncodeToString(digest[:4])
}

// NewKeyring takes the keys as written in the configuration. No keys turns authentication
// off. An unnamed key given twice counts once; a named key given again, or two keys going
// by one identity, is refused: a caller must have one identity.
func NewKeyring(keys []Key) (*Keyring, error) {
	k := &Keyring{}
	for i, key := range keys {
		text := strings.TrimSpace(key.Key)
		if text == "" {
			continue
		}
		d, err := Digest(text)
		if err != nil {
			return nil, fmt.Errorf("api key %d: %w", i+1, err)
		}
		id := ID(key.Name, d)
		if j := k.index(d); j >= 0 {
			if key.Name == "" && k.ids[j] == id {
				continue
			}
			return nil, fmt.Errorf("the keys going by %q and %q are the same key; give each key once", k.ids[j], id)
		}
		for _, other := range k.ids {
			if other == id {
				return nil, fmt.Errorf("two keys go by %q; name one of them", id)
			}
		}
		k.digests, k.ids = append(k.digests, d), append(k.ids, id)
	}
	return k, nil
}

// index is the position of digest d, -1 when absent. Only for building: it exits early.
func (k *Keyring) index(d [sha256.Size]byte) int {
	for i := range k.digests {
		if k.digests[i] == d {
			return i
		}
	}
	return -1
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

// CheckAPIKey verifies the x-api-key values of one call (Anthropic's header, the bare
// key): exactly one is allowed, as in Check.
func (k *Keyring) CheckAPIKey(values []string) (keyID string, ok bool) {
	if len(values) != 1 {
		return "", false
	}
	return k.checkKey(values[0])
}

// check verifies an Authorization value, "NIRMATA-API <key>" or "Bearer <key>".
func (k *Keyring) check(authorization string) (keyID string, ok bool) {
	scheme, key, found := strings.Cut(strings.TrimSpace(authorization), " ")
	if !found || (!strings.EqualFold(scheme, "NIRMATA-API") && !strings.EqualFold(scheme, "Bearer")) {
		return "", false
	}
	return k.checkKey(key)
}

// checkKey verifies a key, comparing every configured key without an early exit. On
// success it returns the key's identity (see ID), safe to log.
func (k *Keyring) checkKey(key string) (keyID string, ok bool) {
	d := sha256.Sum256([]byte(strings.TrimSpace(key)))
	match := -1
	for i := range k.digests {
		match = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(d[:], k.digests[i][:]), i, match)
	}
	if match < 0 {
		return "", false
	}
	return k.ids[match], true
}
