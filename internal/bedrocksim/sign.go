package bedrocksim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
)

// The simulator signs the reasoning blocks it answers with, as the model provider does, so
// that docs/BEDROCK.md G8 and G9 can be enforced: a block sent back must come back unchanged,
// to the model and the conversation it was written for.
//
// A signature is base64 of: a version byte (1), the conversation tag (12 bytes), and
// HMAC-SHA256 under signingKey over the foundation-model id, the conversation tag and the
// block's text. The conversation tag is the first 12 bytes of SHA-256 over the text of the
// conversation's first user message. Carrying the tag lets a block written for another
// conversation be told from a changed one (G9 against G8); a block written for another model
// is found by checking the MAC against the other Claude ids of the table.
//
// A redacted block's data (base64 in JSON, as Bedrock sends it) is: a version byte (2), the
// conversation tag, 32 bytes standing for the encrypted reasoning, and the HMAC over the
// model id, the tag and those 32 bytes.
var signingKey = []byte("bedrocksim: the simulated model provider's reasoning signing key")

const (
	signatureVersion = 1
	redactedVersion  = 2
	tagSize          = 12
	macSize          = sha256.Size
)

// convTag identifies a conversation: SHA-256 of its first user message's text, cut to tagSize.
type convTag [tagSize]byte

// conversationTag is the tag of the conversation msgs.
func conversationTag(msgs []message) convTag {
	var text string
	if len(msgs) > 0 {
		text, _ = turnParts(msgs[0])
	}
	sum := sha256.Sum256([]byte(text))
	return convTag(sum[:tagSize])
}

// reasoningMAC seals one block: kind tells thinking from redacted blocks, and every part is
// written with its length, so no two inputs run together.
func reasoningMAC(kind, modelID string, tag convTag, data []byte) []byte {
	h := hmac.New(sha256.New, signingKey)
	for _, part := range [][]byte{[]byte(kind), []byte(modelID), tag[:], data} {
		writePart(h, part)
	}
	return h.Sum(nil)
}

func writePart(h hash.Hash, part []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(part)))
	h.Write(n[:])
	h.Write(part)
}

// signThinking is the signature of a thinking block with text, written by model modelID in
// the conversation tagged tag.
func signThinking(modelID string, tag convTag, text string) string {
	raw := append([]byte{signatureVersion}, tag[:]...)
	raw = append(raw, reasoningMAC("thinking", modelID, tag, []byte(text))...)
	return base64.StdEncoding.EncodeToString(raw)
}

// redactedData is the data of a redacted block standing for reasoning hidden from the client.
func redactedData(modelID string, tag convTag, hidden string) []byte {
	sealed := sha256.Sum256([]byte("redacted reasoning: " + hidden))
	raw := append([]byte{redactedVersion}, tag[:]...)
	raw = append(raw, sealed[:]...)
	return append(raw, reasoningMAC("redacted", modelID, tag, sealed[:])...)
}

// verdict is what checking a block's seal found.
type verdict int

const (
	valid   verdict = iota
	foreign         // sealed by the simulator, for another model or conversation (G9)
	invalid         // changed, forged or not the simulator's (G8)
)

// verifyThinking checks a thinking block's signature for model modelID in conversation tag.
func verifyThinking(modelID string, tag convTag, text, signature string) verdict {
	raw, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || len(raw) != 1+tagSize+macSize || raw[0] != signatureVersion {
		return invalid
	}
	return verifySeal("thinking", modelID, tag, convTag(raw[1:1+tagSize]), []byte(text), raw[1+tagSize:])
}

// verifyRedacted checks a redacted block's data for model modelID in conversation tag.
func verifyRedacted(modelID string, tag convTag, data []byte) verdict {
	if len(data) != 1+tagSize+sha256.Size+macSize || data[0] != redactedVersion {
		return invalid
	}
	sealed := data[1+tagSize : 1+tagSize+sha256.Size]
	return verifySeal("redacted", modelID, tag, convTag(data[1:1+tagSize]), sealed, data[1+tagSize+sha256.Size:])
}

// verifySeal checks mac over data, written in the conversation tagged blockTag, first as
// modelID's, then as another Claude model's.
func verifySeal(kind, modelID string, tag, blockTag convTag, data, mac []byte) verdict {
	if hmac.Equal(mac, reasoningMAC(kind, modelID, blockTag, data)) {
		if blockTag == tag {
			return valid
		}
		return foreign
	}
	for _, other := range signingModels {
		if other != modelID && hmac.Equal(mac, reasoningMAC(kind, other, blockTag, data)) {
			return foreign
		}
	}
	return invalid
}

// signingModels are the ids of the table's models that answer with signed blocks: Claude
// models with thinking.
var signingModels = func() []string {
	var ids []string
	for _, row := range modelRows {
		for _, id := range row.ids {
			if m := models[id]; isAnthropic(m) && m.Reasoning != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}()
