package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestIgnored: what the translator accepts without effect is left out of the Converse
// request and listed by its path.
func TestIgnored(t *testing.T) {
	t.Parallel()
	const claude, llama = "us.anthropic.claude-sonnet-4-20250514-v1:0", "meta.llama3-1-70b-instruct-v1:0"
	user := chat.Message{Role: chat.RoleUser, Content: "hi"}
	tests := []struct {
		name     string
		model    string
		req      chat.Request
		stop     []string
		ignored  []string
		messages int
	}{
		{"blank stop sequences on Claude", claude, chat.Request{Messages: []chat.Message{user}, Stop: []string{"\n", "", "END", " \t"}},
			[]string{"END"}, []string{"stop[0]", "stop[3]"}, 1},
		{"blank stop sequences elsewhere are kept", llama, chat.Request{Messages: []chat.Message{user}, Stop: []string{"\n", "", "END"}},
			[]string{"\n", "END"}, nil, 1},
		{"an assistant's reasoning parts, until reasoning is built", claude, chat.Request{Messages: []chat.Message{user,
			{Role: chat.RoleAssistant, Parts: []chat.Part{{Type: chat.PartThinking, Text: "hmm"}, {Type: chat.PartText, Text: "Hello"}, {Type: chat.PartRedactedThinking}}},
			{Role: chat.RoleUser, Content: "again"}}},
			nil, []string{"messages[1].content[0]", "messages[1].content[2]"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, names, err := Request(&tt.req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			var stop []string
			if out.InferenceConfig != nil {
				stop = out.InferenceConfig.StopSequences
			}
			assert.Equal(t, tt.stop, stop)
			assert.Equal(t, tt.ignored, names.Ignored)
			assert.Len(t, out.Messages, tt.messages)
		})
	}
}

func TestFunctionRoleIsUnsupported(t *testing.T) {
	t.Parallel()
	req := &chat.Request{Messages: []chat.Message{{Role: "function", Name: "f", Content: "x"}}}
	_, _, err := Request(req, capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0"))
	var re *fault.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "messages[0].role", re.Param)
	assert.Equal(t, fault.ReasonUnsupportedValue, re.Reason)
	assert.Contains(t, re.Msg, "deprecated")
}
