package capabilities_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
)

// TestAnthropicModel: Anthropic's names resolve to the model's inference profile of the
// gateway's region, else its global profile, else the foundation id; other names do not.
func TestAnthropicModel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, region, want string }{
		// Claude Code 2.1's defaults: its main model, its sonnet and haiku choices.
		{"claude-opus-5-5", "us-east-1", "us.anthropic.claude-opus-5-5"},
		{"claude-sonnet-5-5", "eu-west-1", "eu.anthropic.claude-sonnet-5-5"},
		{"claude-haiku-5-5", "ap-southeast-1", "global.anthropic.claude-haiku-5-5"},
		{"claude-sonnet-4-5-20250929", "us-west-2", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-5", "eu-central-1", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-5", "ap-northeast-1", "jp.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-5", "ap-south-1", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-sonnet-4-5", "ca-central-1", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"claude-haiku-4-5-20251001", "us-east-2", "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"claude-opus-4-1-20250805", "ap-northeast-1", "apac.anthropic.claude-opus-4-1-20250805-v1:0"},
		{"claude-opus-4-0", "us-east-1", "us.anthropic.claude-opus-4-20250514-v1:0"},
		{"claude-sonnet-4-20250514", "ap-southeast-2", "apac.anthropic.claude-sonnet-4-20250514-v1:0"},
		{"claude-opus-4-6", "ap-northeast-1", "jp.anthropic.claude-opus-4-6-v1"},
		{"claude-sonnet-4-6", "eu-north-1", "eu.anthropic.claude-sonnet-4-6"},
		{"claude-opus-4-7", "us-east-1", "us.anthropic.claude-opus-4-7"},
		{"claude-3-5-haiku-latest", "us-east-1", "us.anthropic.claude-3-5-haiku-20241022-v1:0"},
		{"claude-3-5-haiku-latest", "eu-west-1", "anthropic.claude-3-5-haiku-20241022-v1:0"},
		{"claude-3-haiku-20240307", "sa-east-1", "anthropic.claude-3-haiku-20240307-v1:0"},
		{"claude-3-7-sonnet-latest", "us-gov-west-1", "anthropic.claude-3-7-sonnet-20250219-v1:0"},
	} {
		id, ok := capabilities.AnthropicModel(tt.name, tt.region)
		assert.True(t, ok, tt.name)
		assert.Equal(t, tt.want, id, "%s in %s", tt.name, tt.region)
		assert.Equal(t, tt.want, capabilities.AnthropicModels(tt.region)[tt.name])
		assert.True(t, capabilities.IsModelID(id), id)
	}
	for _, name := range []string{"claude-sonnet-9", "gpt-4o", "anthropic.claude-sonnet-4-5-20250929-v1:0", ""} {
		_, ok := capabilities.AnthropicModel(name, "us-east-1")
		assert.False(t, ok, name)
	}
}

// TestAnthropicTableKnown: every model of the table is one the capability table knows, as
// Claude, with a maximum output.
func TestAnthropicTableKnown(t *testing.T) {
	t.Parallel()
	for _, row := range capabilities.AnthropicNames() {
		m := capabilities.Lookup(row.ID)
		assert.True(t, m.Known, row.ID)
		assert.NotZero(t, m.MaxOutput, row.ID)
		assert.True(t, strings.HasPrefix(row.ID, "anthropic.claude-"), row.ID)
	}
}

// TestAnthropicTableDocumented: docs/BEDROCK.md section L shows the table as the code
// holds it.
func TestAnthropicTableDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/BEDROCK.md")
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("| Anthropic names | Bedrock foundation model | inference profiles |\n|---|---|---|\n")
	for _, row := range capabilities.AnthropicNames() {
		profiles := "none"
		if len(row.Profiles) > 0 {
			profiles = "`" + strings.Join(row.Profiles, "`, `") + "`"
		}
		b.WriteString("| `" + strings.Join(row.Names, "`, `") + "` | `" + row.ID + "` | " + profiles + " |\n")
	}
	assert.Contains(t, string(doc), b.String(), "docs/BEDROCK.md L's table, as the code has it:\n%s", b.String())
}
