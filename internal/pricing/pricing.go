// Package pricing prices Bedrock calls in US dollars (docs/PROTOCOL.md 17.1): a table of
// what each model's input, output, prompt-cache read and prompt-cache write tokens cost,
// with defaults from the published prices (defaults.go) that the configuration's prices
// override.
package pricing

import (
	"math"
	"strings"
	"sync"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// Price is what a model's tokens cost, in US dollars per million tokens.
type Price struct {
	// Input is an input token neither read from nor written to the prompt cache.
	Input float64
	// Output is an output token, reasoning included.
	Output float64
	// CacheRead and CacheWrite are an input token read from, and written to, the prompt
	// cache.
	CacheRead, CacheWrite float64
}

// perToken turns a price per million tokens into one per token.
const perToken = 1e-6

// Cost is what u cost at p, in US dollars. u.PromptTokens holds the cache reads and writes
// (translate.Usage), so the input billed at Input is what remains of it without them.
func (p Price) Cost(u chat.Usage) float64 {
	read, write := float64(u.CacheReadTokens), float64(u.CacheWriteTokens)
	input := max(float64(u.PromptTokens)-read-write, 0)
	return (input*p.Input + float64(u.CompletionTokens)*p.Output + read*p.CacheRead + write*p.CacheWrite) * perToken
}

// Round is usd to the nano-dollar, as costs are reported (access lines, audit records,
// usage totals): sums of float64 amounts carry noise in their last digits.
func Round(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }

// Micros is usd in micro-dollars, the unit the keys' dollar budgets are counted in,
// rounded up: a call is never counted as costing less than it did. The amount is first
// rounded to the nano-dollar, so that a cost of exactly n micro-dollars, which floating
// point may hold as a hair above n, is n.
func Micros(usd float64) int64 {
	if !(usd > 0) {
		return 0
	}
	return int64(math.Ceil(math.Round(usd*1e9) / 1e3))
}

// maxMissed bounds the models without a price a Table remembers having seen, so that a
// stream of model ids cannot grow it.
const maxMissed = 1000

// Table is the prices of the models, by model id or foundation model id. It is safe for
// concurrent use; a nil Table prices nothing.
type Table struct {
	prices map[string]Price

	mu     sync.Mutex
	missed map[string]bool // the models Missing has said so of
}

// New returns the table of the default prices (Defaults), with overrides replacing them
// model by model: a model id or a foundation model id, each with its four prices.
func New(overrides map[string]Price) *Table {
	prices := Defaults()
	for id, p := range overrides {
		prices[id] = p
	}
	return &Table{prices: prices, missed: map[string]bool{}}
}

// Lookup returns the price of model, the id a call went to: the price of that id; else,
// for an ARN of a foundation model or an inference profile, the price of the id it ends
// with; else that of its foundation model, the id without its cross-Region prefix
// (capabilities.Foundation). An inference profile with a price of its own (global.… for
// Anthropic's models since Claude Sonnet 4.5, which Bedrock charges less than in one
// Region or geography) has it; others cost what their model costs. ok is false when the
// table has none: the call costs 0.
func (t *Table) Lookup(model string) (p Price, ok bool) {
	if t == nil {
		return Price{}, false
	}
	if p, ok = t.prices[model]; ok {
		return p, true
	}
	if strings.HasPrefix(model, "arn:") {
		if i := strings.LastIndexByte(model, '/'); i >= 0 {
			if p, ok = t.prices[model[i+1:]]; ok {
				return p, true
			}
		}
	}
	p, ok = t.prices[capabilities.Foundation(model)]
	return p, ok
}

// Missing reports whether model, which Lookup found no price for, is one the table has
// not been asked about before (for its first maxMissed such models), so that its caller
// says once that the model's calls cost 0.
func (t *Table) Missing(model string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.missed[model] || len(t.missed) >= maxMissed {
		return false
	}
	t.missed[model] = true
	return true
}
