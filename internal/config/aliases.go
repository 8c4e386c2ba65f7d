package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// aliasTable is the model_aliases setting: each alias's targets, and the defaults of the
// aliases the YAML file gives as objects. Flags and environment variables give name=id: one
// target in the gateway's region.
type aliasTable struct {
	targets  *map[string][]Target
	defaults *map[string]AliasDefaults
}

func (t *aliasTable) reset() { *t.targets, *t.defaults = nil, nil }

func (t *aliasTable) add(name string, targets ...Target) {
	if *t.targets == nil {
		*t.targets = map[string][]Target{}
	}
	(*t.targets)[name] = targets
}

// maxTargets bounds an alias's targets: each is one more Bedrock call a request may make.
const maxTargets = 8

// aliasKeys are the members of an alias object, in the order errors list them.
var aliasKeys = []string{"targets", "prompt_caching", "parallel_tool_calls", "max_tool_rounds", "reasoning_effort", "tool_validation"}

// reasoningEfforts are the values of reasoning_effort (docs/PROTOCOL.md 11.1).
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// decode reads model_aliases from the YAML file (as JSON): each value a model id, or an
// object (docs/PROTOCOL.md 14.1, 14.4):
//
//	agent:
//	  targets:
//	    - {model_id: us.anthropic.claude-sonnet-4-5-20250929-v1:0, region: us-east-1}
//	    - {model_id: us.anthropic.claude-sonnet-4-20250514-v1:0}
//	  prompt_caching: auto
//	  parallel_tool_calls: false
//	  max_tool_rounds: 30
//	  reasoning_effort: medium
//	  tool_validation: repair
func (t *aliasTable) decode(raw jsontext.Value) error {
	t.reset()
	var m map[string]jsontext.Value
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("want a mapping of names to model ids or alias objects, got %s", raw)
	}
	for _, name := range slices.Sorted(maps.Keys(m)) { // the first bad one, always the same
		v := m[name]
		switch v.Kind() {
		case '"':
			var id string
			if err := json.Unmarshal(v, &id); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			t.add(name, Target{ModelID: id})
		case '{':
			var members map[string]jsontext.Value
			if err := json.Unmarshal(v, &members); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			targets, d, err := aliasObject(members)
			if err != nil {
				return fmt.Errorf("%s.%w", name, err)
			}
			t.add(name, targets...)
			if *t.defaults == nil {
				*t.defaults = map[string]AliasDefaults{}
			}
			(*t.defaults)[name] = d
		default:
			return fmt.Errorf("%s: want a model id or an alias object, got %s", name, v)
		}
	}
	return nil
}

// aliasObject reads the members of an alias given as an object: its targets and its
// defaults. Each error starts with the path of the member it is about.
func aliasObject(members map[string]jsontext.Value) (targets []Target, d AliasDefaults, err error) {
	for _, k := range slices.Sorted(maps.Keys(members)) {
		v := members[k]
		switch k {
		case "targets":
			if targets, err = aliasTargets(v); err != nil {
				return nil, d, err
			}
		case "prompt_caching":
			var text string
			if text, err = scalarText(v); err == nil {
				d.PromptCaching, err = parseCaching(text)
			}
		default:
			var known bool
			if known, err = d.member(k, v); !known {
				err = fmt.Errorf("unknown key; an alias object takes %s", strings.Join(aliasKeys, ", "))
			}
		}
		if err != nil {
			return nil, d, fmt.Errorf("%s: %w", k, err)
		}
	}
	if targets == nil {
		return nil, d, errors.New("targets: missing; give a list of {model_id: <Bedrock model id>, region: <AWS region, optional>}")
	}
	return targets, d, nil
}

// aliasTargets reads targets: 1 to maxTargets of {model_id, region}, region optional,
// none the same as another. Errors start with targets.
func aliasTargets(raw jsontext.Value) ([]Target, error) {
	var items []map[string]jsontext.Value
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("targets: want a list of {model_id: …, region: …}, got %s", raw)
	}
	if n := len(items); n < 1 || n > maxTargets {
		return nil, fmt.Errorf("targets: %d given; an alias takes 1 to %d", n, maxTargets)
	}
	targets := make([]Target, len(items))
	for i, item := range items {
		t := &targets[i]
		for _, k := range slices.Sorted(maps.Keys(item)) {
			v := item[k]
			switch k {
			case "model_id":
				text, err := scalarText(v)
				if err != nil || text == "" {
					return nil, fmt.Errorf("targets[%d].model_id: want a Bedrock model id, got %s", i, v)
				}
				t.ModelID = text
			case "region":
				text, err := scalarText(v)
				if err != nil || !isRegion(text) {
					return nil, fmt.Errorf("targets[%d].region: want an AWS region like us-east-1, got %s", i, v)
				}
				t.Region = text
			default:
				return nil, fmt.Errorf("targets[%d].%s: unknown key; a target takes model_id and region", i, k)
			}
		}
		if t.ModelID == "" {
			return nil, fmt.Errorf("targets[%d].model_id: missing", i)
		}
		if j := slices.Index(targets[:i], *t); j >= 0 {
			return nil, fmt.Errorf("targets[%d]: the same as targets[%d]", i, j)
		}
	}
	return targets, nil
}

// isRegion reports whether s has the shape of an AWS region name: a two-letter
// geography, one or more lower-case words, and a number ("us-east-1", "us-gov-west-1",
// "ap-southeast-2"). It does not say the region exists: the endpoint resolution does.
func isRegion(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 || len(parts[0]) != 2 {
		return false
	}
	for _, p := range parts[:len(parts)-1] {
		if p == "" || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") != "" {
			return false
		}
	}
	n := parts[len(parts)-1]
	return n != "" && len(n) <= 2 && strings.Trim(n, "0123456789") == ""
}

// scalarText is a scalar member as text: a string as it is, a number, true or false as
// written, as a flag would give it.
func scalarText(v jsontext.Value) (string, error) {
	switch v.Kind() {
	case '"':
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	case '0', 't', 'f':
		return string(v), nil
	}
	return "", fmt.Errorf("want a single value, got %s", v)
}
