package translate

import (
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// maxMetadataChars bounds a requestMetadata key or value: Bedrock takes 256 characters.
const maxMetadataChars = 256

// requestMetadata is what Bedrock's requestMetadata carries of a request (docs/PROTOCOL.md
// 14.6): the end user, the prompt-cache key, the client type and the calling key's
// identity (its name, else 8 hex digits of its digest: never the key), each cut to
// Bedrock's length and character set. nil when there is none.
func requestMetadata(req *chat.Request) map[string]string {
	var md map[string]string
	for _, kv := range [...]struct{ key, value string }{
		{"user", req.User}, {"cache_key", req.CacheKey}, {"client_type", req.ClientType}, {"gateway_key", req.KeyID},
	} {
		if kv.value == "" {
			continue
		}
		if md == nil {
			md = make(map[string]string, 4)
		}
		md[kv.key] = metadataValue(kv.value)
	}
	return md
}

// metadataValue cuts s to 256 characters of Bedrock's set [a-zA-Z0-9\s._:/=+$@-], each
// other character replaced with "_".
func metadataValue(s string) string {
	if len(s) <= maxMetadataChars && !strings.ContainsFunc(s, func(r rune) bool { return !metadataChar(r) }) {
		return s // already within: no copy
	}
	out := make([]byte, 0, min(len(s), maxMetadataChars))
	n := 0
	for _, r := range s {
		if n == maxMetadataChars {
			break
		}
		n++
		if !metadataChar(r) {
			r = '_'
		}
		out = append(out, byte(r))
	}
	return string(out)
}

// metadataChar reports whether r is in Bedrock's set for requestMetadata.
func metadataChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
	case r == ' ', r == '\t', r == '\n', r == '\r', r == '\f', r == '\v':
	case r == '.', r == '_', r == ':', r == '/', r == '=', r == '+', r == '$', r == '@', r == '-':
	default:
		return false
	}
	return true
}

// serviceTier is the request's service tier; nil sends none.
func serviceTier(req *chat.Request) *bedrock.ServiceTier {
	if req.ServiceTier == "" {
		return nil
	}
	return &bedrock.ServiceTier{Type: req.ServiceTier}
}
