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

// aliasTable is the model_aliases setting: each alias's model id, and the defaults of the
// aliases the YAML file gives as objects. Flags and environment variables give name=id.
type aliasTable struct {
	ids      *map[string]string
	defaults *map[string]AliasDefaults
}

func (t *aliasTable) reset() { *t.ids, *t.defaults = nil, nil }

func (t *aliasTable) add(name, id string) {
	if *t.ids == nil {
		*t.ids = map[string]string{}
	}
	(*t.ids)[name] = id
}

// aliasKeys are the members of an alias object, in the order errors list them.
var aliasKeys = []string{"targets", "prompt_caching", "parallel_tool_calls", "max_tool_rounds", "reasoning_effort", "tool_validation"}

// reasoningEfforts are the values of reasoning_effort (docs/PROTOCOL.md 11.1).
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// decode reads model_aliases from the YAML file (as JSON): each value a model id, or an
// object (docs/PROTOCOL.md 14.1):
//
//	agent:
//	  targets: [{model_id: us.anthropic.claude-sonnet-4-5-20250929-v1:0}]
//	  prompt_caching: auto
//	  parallel_tool_calls: false
//	  max_tool_rounds: 30
//	  reasoning_effort: medium
//	  tool_validation: repair
//
// Failover between targets is not built yet, so an object takes exactly one target,
// without region: more is refused rather than silently reduced to the first.
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
			t.add(name, id)
		case '{':
			var members map[string]jsontext.Value
			if err := json.Unmarshal(v, &members); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			id, d, err := aliasObject(members)
			if err != nil {
				return fmt.Errorf("%s.%w", name, err)
			}
			t.add(name, id)
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

// aliasObject reads the members of an alias given as an object: its model id and its
// defaults. Each error starts with the path of the member it is about.
func aliasObject(members map[string]jsontext.Value) (id string, d AliasDefaults, err error) {
	for _, k := range slices.Sorted(maps.Keys(members)) {
		v := members[k]
		switch k {
		case "targets":
			if id, err = aliasTarget(v); err != nil {
				return "", d, err
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
			return "", d, fmt.Errorf("%s: %w", k, err)
		}
	}
	if id == "" {
		return "", d, errors.New("targets: missing; give one target, {model_id: <Bedrock model id>}")
	}
	return id, d, nil
}

// aliasTarget reads targets: one target, a model id without region, until failover
// between targets (docs/PROTOCOL.md 14.4) is built. Errors start with targets.
func aliasTarget(raw jsontext.Value) (string, error) {
	var targets []map[string]jsontext.Value
	if err := json.Unmarshal(raw, &targets); err != nil {
		return "", fmt.Errorf("targets: want a list of {model_id: …}, got %s", raw)
	}
	if len(targets) != 1 {
		return "", fmt.Errorf("targets: %d given; failover between targets is not built yet, so an alias takes exactly one", len(targets))
	}
	var id string
	for _, k := range slices.Sorted(maps.Keys(targets[0])) {
		v := targets[0][k]
		switch k {
		case "model_id":
			text, err := scalarText(v)
			if err != nil || text == "" {
				return "", fmt.Errorf("targets[0].model_id: want a Bedrock model id, got %s", v)
			}
			id = text
		case "region":
			return "", errors.New("targets[0].region: a target in another region comes with failover, which is not built yet; leave region out to use the gateway's")
		default:
			return "", fmt.Errorf("targets[0].%s: unknown key; a target takes model_id", k)
		}
	}
	if id == "" {
		return "", errors.New("targets[0].model_id: missing")
	}
	return id, nil
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
