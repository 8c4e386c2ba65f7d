package translate_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// TestRequestMetadata: requestMetadata carries the end user, the prompt-cache key, the
// client type and the calling key's identity, each cut to 256 characters of Bedrock's set
// (docs/PROTOCOL.md 14.6); a request with none of them sends no requestMetadata.
func TestRequestMetadata(t *testing.T) {
	t.Parallel()
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	model := capabilities.Lookup(testModel)

	out, _, err := translate.Request(&chat.Request{Messages: msgs}, model)
	require.NoError(t, err)
	assert.Nil(t, out.RequestMetadata)

	out, _, err = translate.Request(&chat.Request{Messages: msgs, KeyID: "ci", ClientType: "kyverno cli/1.0 (é)",
		User: strings.Repeat("u", 300), CacheKey: "conv#7"}, model)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"gateway_key": "ci", "client_type": "kyverno cli/1.0 ___", "user": strings.Repeat("u", 256), "cache_key": "conv_7",
	}, out.RequestMetadata)
}
