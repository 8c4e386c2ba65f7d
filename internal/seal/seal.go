// Package seal seals a turn's Bedrock reasoning blocks into an opaque string a stateless
// client hands back (OpenAI's encrypted_content, docs/PROTOCOL.md 16), and opens it again
// byte for byte. A value is AES-256-GCM under a key of the gateway, bound to the caller's
// key id, so it cannot move between keys; it carries the foundation model the blocks came
// from, so they are never sent to another (docs/BEDROCK.md G9).
//
// The form is base64url (no padding) of: a version byte, the sealing key's 4-byte short
// id, a 12-byte nonce, and the ciphertext with its tag. The version byte, the short id and
// the caller's key id are the additional data.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// KeyBytes is the length of a sealing key: AES-256.
const KeyBytes = 32

// MaxValueBytes bounds a value Open reads, before it decodes it: Claude's longest
// reasoning (128k tokens) with its signature and JSON is under 1 MiB, whose base64 is
// under 1.4 MiB.
const MaxValueBytes = 2 << 20

const (
	version   = 1
	shortID   = 4
	nonceSize = 12
	header    = 1 + shortID + nonceSize
)

// Errors of Open; none says more than what the client can act on.
var (
	ErrTooLarge  = fmt.Errorf("is over %d bytes", MaxValueBytes)
	ErrMalformed = errors.New("was not sealed by this gateway")
	// ErrUnknownKey: the value names a key the gateway does not hold (sealed by another
	// gateway, or with a key since retired).
	ErrUnknownKey = errors.New("was sealed with a key this gateway does not hold")
	// ErrOpen: the value does not open: changed, or sealed for another caller's key.
	ErrOpen = errors.New("does not open: it was changed, or sealed for another API key")
)

// Sealer seals with its first key and opens with any of its keys, so a rotation keeps the
// values sealed with the previous key readable. Safe for concurrent use.
type Sealer struct {
	keys []sealKey
}

type sealKey struct {
	id   [shortID]byte
	aead cipher.AEAD
}

// New returns a Sealer of keys, each KeyBytes long; the first seals.
func New(keys ...[]byte) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	s := &Sealer{}
	for i, k := range keys {
		if len(k) != KeyBytes {
			return nil, fmt.Errorf("key %d has %d bytes; want %d", i, len(k), KeyBytes)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(k)
		var sk sealKey
		copy(sk.id[:], sum[:shortID])
		sk.aead = aead
		s.keys = append(s.keys, sk)
	}
	return s, nil
}

// Random returns a Sealer of one key of random bytes: its values open in this process
// only.
func Random() *Sealer {
	k := make([]byte, KeyBytes)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	s, _ := New(k)
	return s
}

// ParseKey reads a key as configured: 64 hex digits (openssl rand -hex 32), or base64,
// standard or URL-safe, of 32 bytes (openssl rand -base64 32). Its errors never quote it.
func ParseKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if len(text) == 2*KeyBytes {
		if k, err := hex.DecodeString(text); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(text); err == nil {
			if len(k) != KeyBytes {
				return nil, fmt.Errorf("decodes to %d bytes; want %d (openssl rand -base64 32)", len(k), KeyBytes)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("is neither %d hex digits nor base64 of %d bytes (openssl rand -base64 32)", 2*KeyBytes, KeyBytes)
}

// sealed is what a value holds.
type sealed struct {
	Model  string  `json:"m"`
	Blocks []block `json:"b"`
}

type block struct {
	Redacted  bool   `json:"r,omitzero"`
	Text      string `json:"t,omitzero"`
	Signature string `json:"s,omitzero"`
	Data      string `json:"d,omitzero"`
}

// Seal seals blocks, which came from the foundation model model, for the caller's key id
// keyID.
func (s *Sealer) Seal(keyID, model string, blocks []chat.ReasoningBlock) string {
	in := sealed{Model: model, Blocks: make([]block, len(blocks))}
	for i, b := range blocks {
		in.Blocks[i] = block{Redacted: b.Redacted, Text: b.Text, Signature: b.Signature, Data: b.Data}
	}
	plain, _ := json.Marshal(&in) // strings and bools only
	k := &s.keys[0]
	out := make([]byte, header, header+len(plain)+k.aead.Overhead())
	out[0] = version
	copy(out[1:], k.id[:])
	_, _ = rand.Read(out[1+shortID : header])
	out = k.aead.Seal(out, out[1+shortID:header], plain, additional(out[:1+shortID], keyID))
	return base64.RawURLEncoding.EncodeToString(out)
}

// Open opens a value Seal made for the caller's key id keyID: the blocks, and the
// foundation model they came from.
func (s *Sealer) Open(keyID, value string) (model string, blocks []chat.ReasoningBlock, err error) {
	if len(value) > MaxValueBytes {
		return "", nil, ErrTooLarge
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < header || raw[0] != version {
		return "", nil, ErrMalformed
	}
	k := s.key(raw[1 : 1+shortID])
	if k == nil {
		return "", nil, ErrUnknownKey
	}
	plain, err := k.aead.Open(nil, raw[1+shortID:header], raw[header:], additional(raw[:1+shortID], keyID))
	if err != nil {
		return "", nil, ErrOpen
	}
	var out sealed
	if err := json.Unmarshal(plain, &out); err != nil {
		return "", nil, ErrMalformed // sealed by this key, so never: a bug, not the client's
	}
	blocks = make([]chat.ReasoningBlock, len(out.Blocks))
	for i, b := range out.Blocks {
		blocks[i] = chat.ReasoningBlock{Redacted: b.Redacted, Text: b.Text, Signature: b.Signature, Data: b.Data}
	}
	return out.Model, blocks, nil
}

func (s *Sealer) key(id []byte) *sealKey {
	for i := range s.keys {
		if string(s.keys[i].id[:]) == string(id) {
			return &s.keys[i]
		}
	}
	return nil
}

// additional is the additional data: the value's version and key id, and the caller's key
// id.
func additional(head []byte, keyID string) []byte {
	return append(append(append([]byte{}, head...), 0), keyID...)
}
