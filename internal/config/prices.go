package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/pricing"
)

// priceMembers are the members of a prices entry, each required.
var priceMembers = []string{"input", "output", "cache_read", "cache_write"}

// maxPrice bounds a price, in US dollars per million tokens: far above any model's, and
// low enough that a call's cost stays in range of the quota's micro-dollar counters.
const maxPrice = 1_000_000

// decodePrices reads prices from the YAML file (as JSON): a mapping of model ids or
// foundation model ids to their prices in US dollars per million tokens
// (docs/PROTOCOL.md 17.1), e.g.
//
//	prices:
//	  anthropic.claude-sonnet-4-20250514-v1:0: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
//
// An entry replaces the default price of its id whole, so it gives all four members.
// Errors start with the entry they are about (`["amazon.nova-pro-v1:0"].input: …`, which
// Load puts after "prices"), the first in the order of the ids.
func decodePrices(raw jsontext.Value) (map[string]pricing.Price, error) {
	var entries map[string]jsontext.Value
	if raw.Kind() != '{' || json.Unmarshal(raw, &entries) != nil {
		return nil, errors.New("want a mapping of model ids to {input, output, cache_read, cache_write}, US dollars per million tokens")
	}
	prices := make(map[string]pricing.Price, len(entries))
	for _, id := range slices.Sorted(maps.Keys(entries)) {
		if !capabilities.IsModelID(id) {
			return nil, fmt.Errorf("[%q]: not a Bedrock model id; %s", id, modelIDShapes)
		}
		p, err := priceObject(entries[id])
		if err != nil {
			return nil, fmt.Errorf("[%q]%w", id, err)
		}
		prices[id] = p
	}
	return prices, nil
}

// priceObject reads one entry of prices. Each error starts with ".member: " or ": ".
func priceObject(raw jsontext.Value) (pricing.Price, error) {
	var p pricing.Price
	var members map[string]jsontext.Value
	if raw.Kind() != '{' || json.Unmarshal(raw, &members) != nil {
		return p, errors.New(": want an object {input, output, cache_read, cache_write}")
	}
	fields := map[string]*float64{"input": &p.Input, "output": &p.Output, "cache_read": &p.CacheRead, "cache_write": &p.CacheWrite}
	for _, m := range slices.Sorted(maps.Keys(members)) {
		field, ok := fields[m]
		if !ok {
			return p, fmt.Errorf(".%s: unknown member; a price takes %s", m, strings.Join(priceMembers, ", "))
		}
		v := members[m]
		if v.Kind() != '0' || json.Unmarshal(v, field) != nil || !(*field >= 0 && *field <= maxPrice) {
			return p, fmt.Errorf(".%s: want US dollars per million tokens, from 0 to %d, got %s", m, maxPrice, v)
		}
	}
	for _, m := range priceMembers {
		if _, ok := members[m]; !ok {
			return p, fmt.Errorf(".%s: missing; give %s (0 for a model without prompt caching)", m, strings.Join(priceMembers, ", "))
		}
	}
	return p, nil
}
