package pricing_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/pricing"
)

// TestCost: a usage costs its input without the cache tokens at the input price, and each
// kind of token at its own price. PromptTokens holds the cache reads and writes, so
// charging it whole at the input price, and the cache tokens again, would overcharge.
func TestCost(t *testing.T) {
	t.Parallel()
	p := pricing.Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}
	for _, c := range []struct {
		name string
		u    chat.Usage
		want float64 // micro-dollars
	}{
		{"no usage", chat.Usage{}, 0},
		{"input and output", chat.Usage{PromptTokens: 1000, CompletionTokens: 50}, 1000*3 + 50*15},
		{"cache reads and writes inside the prompt tokens",
			chat.Usage{PromptTokens: 1000 + 200 + 300, CompletionTokens: 50, CacheReadTokens: 200, CacheWriteTokens: 300},
			1000*3 + 50*15 + 200*0.30 + 300*3.75},
		{"a whole prompt read from the cache", chat.Usage{PromptTokens: 4000, CompletionTokens: 10, CacheReadTokens: 4000},
			4000*0.30 + 10*15},
		{"cache tokens beyond the prompt's (never from Bedrock) cost no negative input",
			chat.Usage{PromptTokens: 10, CacheReadTokens: 20}, 20 * 0.30},
	} {
		assert.InDelta(t, c.want/1e6, p.Cost(c.u), 1e-15, c.name)
	}
}

// TestMicros: dollars become whole micro-dollars, rounded up, so a budget never counts a
// call as cheaper than it was; an amount of exactly n micro-dollars that floating point
// holds a hair above n is n.
func TestMicros(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		usd  float64
		want int64
	}{
		{0, 0}, {-1, 0}, {math.NaN(), 0},
		{0.000105, 105},
		{30*3e-6 + 5*15e-6, 165}, // 0.00016500000000000003 in float64
		{0.0001051, 106},
		{1e-9, 1},
		{12.5, 12_500_000},
	} {
		assert.Equal(t, c.want, pricing.Micros(c.usd), "%v", c.usd)
	}
}

// TestLookup: a call is priced by its own id, the id an ARN names, then its foundation
// model; a global profile of a model Bedrock prices apart costs less than the same model in
// a geography; the configuration's prices replace the defaults, by profile or by
// foundation model.
func TestLookup(t *testing.T) {
	t.Parallel()
	sonnet4 := pricing.Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}
	sonnet45 := pricing.Price{Input: 3.30, Output: 16.50, CacheRead: 0.33, CacheWrite: 4.125}
	sonnet45Global := pricing.Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}
	table := pricing.New(nil)
	for _, c := range []struct {
		model string
		want  pricing.Price
	}{
		{"anthropic.claude-sonnet-4-20250514-v1:0", sonnet4},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", sonnet4},
		{"apac.anthropic.claude-sonnet-4-20250514-v1:0", sonnet4},
		{"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0", sonnet4},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet45},
		{"eu.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet45},
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet45},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet45Global},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet45Global},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet45},
	} {
		got, ok := table.Lookup(c.model)
		assert.True(t, ok, c.model)
		assert.Equal(t, c.want, got, c.model)
	}
	for _, model := range []string{
		"anthropic.claude-sonnet-5-5",
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
		"", "not-a-model",
	} {
		got, ok := table.Lookup(model)
		assert.False(t, ok, model)
		assert.Zero(t, got, model)
	}
	var none *pricing.Table
	_, ok := none.Lookup("anthropic.claude-sonnet-4-20250514-v1:0")
	assert.False(t, ok, "a nil table prices nothing")

	discount := pricing.Price{Input: 2.7, Output: 13.5, CacheRead: 0.27, CacheWrite: 3.375}
	profile := pricing.Price{Input: 1, Output: 2}
	overridden := pricing.New(map[string]pricing.Price{
		"anthropic.claude-sonnet-4-20250514-v1:0":    discount,
		"eu.anthropic.claude-sonnet-4-20250514-v1:0": profile,
		"anthropic.claude-sonnet-5-5":                discount,
	})
	for _, c := range []struct {
		model string
		want  pricing.Price
	}{
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", discount},
		{"eu.anthropic.claude-sonnet-4-20250514-v1:0", profile},
		{"global.anthropic.claude-sonnet-5-5", discount},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", sonnet4}, // the defaults stay for the rest
	} {
		got, ok := overridden.Lookup(c.model)
		assert.True(t, ok, c.model)
		assert.Equal(t, c.want, got, c.model)
	}
	got, _ := table.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0")
	assert.Equal(t, sonnet4, got, "overrides change their own table only")
}

// TestMissing: a model without a price is reported once, and only the first thousand such
// models are remembered.
func TestMissing(t *testing.T) {
	t.Parallel()
	table := pricing.New(nil)
	assert.True(t, table.Missing("anthropic.claude-sonnet-5-5"))
	assert.False(t, table.Missing("anthropic.claude-sonnet-5-5"), "once")
	for i := range 2000 {
		table.Missing("provider.model-" + strconv.Itoa(i))
	}
	assert.False(t, table.Missing("provider.model-new"), "the memory is bounded")
	assert.False(t, (*pricing.Table)(nil).Missing("x"))
}

// leftOut are the simulator's models the defaults leave without a price, as their comment
// says why; a model added to the simulator's table without a price, or a price added
// without taking the model off this list, fails TestDefaultsCoverTheModels.
var leftOut = map[string]bool{
	"anthropic.claude-opus-5-5":       true,
	"anthropic.claude-sonnet-5-5":     true,
	"anthropic.claude-haiku-5-5":      true,
	"amazon.nova-2-lite-v1:0":         true,
	"meta.llama3-2-11b-instruct-v1:0": true,
	"meta.llama3-2-90b-instruct-v1:0": true,
	"mistral.mistral-large-2402-v1:0": true,
	"deepseek.v3-v1:0":                true,
	"deepseek.v3-2-v1:0":              true,
}

// TestDefaultsCoverTheModels: every model of the capability table the simulator serves
// has a default price, but those left out on purpose.
func TestDefaultsCoverTheModels(t *testing.T) {
	t.Parallel()
	table := pricing.New(nil)
	for _, m := range bedrocksim.Models() {
		_, ok := table.Lookup(m.ID)
		assert.Equal(t, !leftOut[m.ID], ok, "%s: priced %v, but leftOut says %v", m.ID, ok, leftOut[m.ID])
	}
}

// TestDefaultsAreSane: every default price is finite and not negative, output costs at
// least what input does, and Claude's cache prices are its input price times Bedrock's
// multipliers (a read 0.1, a write 1.25), Nova's reads a quarter of it.
func TestDefaultsAreSane(t *testing.T) {
	t.Parallel()
	for id, p := range pricing.Defaults() {
		for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
			assert.True(t, v >= 0 && !math.IsInf(v, 0), "%s: %v", id, p)
		}
		assert.Positive(t, p.Input, id)
		assert.GreaterOrEqual(t, p.Output, p.Input, id)
		switch {
		case strings.Contains(id, "anthropic.") && p.CacheRead != 0:
			assert.InDelta(t, 0.1*p.Input, p.CacheRead, 1e-12, id)
			assert.InDelta(t, 1.25*p.Input, p.CacheWrite, 1e-12, id)
		case strings.HasPrefix(id, "amazon.nova-"):
			assert.InDelta(t, 0.25*p.Input, p.CacheRead, 1e-12, id)
		}
		if global, ok := strings.CutPrefix(id, "global."); ok {
			regional, found := pricing.Defaults()[global]
			require.True(t, found, "%s has no regional row", id)
			assert.InDelta(t, 1.1*p.Input, regional.Input, 1e-12, id)
			assert.InDelta(t, 1.1*p.Output, regional.Output, 1e-12, id)
		}
	}
}
