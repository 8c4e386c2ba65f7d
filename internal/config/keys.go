package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/auth"
)

// Key is one entry of keys (docs/PROTOCOL.md 14.1): a client key with the name it goes
// by, its limits and its defaults.
type Key struct {
	// Name stands for the key in logs, metrics, errors and Bedrock's requestMetadata; ""
	// leaves it the first 8 hex digits of the key's SHA-256.
	Name string
	// Key is the key, or "sha256:<64 hex digits>" of it. Never logged.
	Key string
	// The key's limits (docs/PROTOCOL.md 14.2); 0 is none.
	RequestsPerMinute, TokensPerMinute, TokensPerDay int64
	// USDPerDay and USDPerMonth are the key's dollar budgets (docs/PROTOCOL.md 17.2), in
	// US dollars; 0 is none.
	USDPerDay, USDPerMonth float64
	// Audit is the audit level of the key's calls, in place of the audit setting's;
	// "" is that setting's (docs/PROTOCOL.md 17).
	Audit string
	Defaults
}

// keyMembers are the members of a keys entry, in the order errors list them.
var keyMembers = []string{"name", "key", "requests_per_minute", "tokens_per_minute", "tokens_per_day",
	"usd_per_day", "usd_per_month", "parallel_tool_calls", "max_tool_rounds", "tool_validation", "reasoning_effort", "audit"}

// maxKeyName bounds a key's name: it is a metric label, a log field and a Redis key part.
const maxKeyName = 64

// decodeKeys reads keys from the YAML file (as JSON): a list of objects, e.g.
//
//	keys:
//	  - name: ci
//	    key: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	    requests_per_minute: 60
//	    tokens_per_minute: 200000
//	    tool_validation: repair
//
// Errors start with the path of the entry or member they are about ("[2].name: …", which
// Load puts after "keys"). They never quote a name or a key: a key written in the wrong
// place would end up on the terminal.
func decodeKeys(raw jsontext.Value) ([]Key, error) {
	var items []jsontext.Value
	if raw.Kind() != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, errors.New("want a list of {name, key, …} objects")
	}
	keys := make([]Key, 0, len(items))
	digests := make([][sha256.Size]byte, 0, len(items))
	ids := make([]string, 0, len(items))
	for i, item := range items {
		k, err := keyObject(item)
		if err != nil {
			return nil, fmt.Errorf("[%d]%w", i, err)
		}
		d, _ := auth.Digest(k.Key) // keyObject checked it
		if j := slices.Index(digests, d); j >= 0 {
			return nil, fmt.Errorf("[%d].key: the same key as keys[%d]", i, j)
		}
		if j := slices.Index(ids, auth.ID(k.Name, d)); j >= 0 {
			if k.Name == "" {
				return nil, fmt.Errorf("[%d]: its SHA-256 starts as that of keys[%d], whose name it would take; give it a name", i, j)
			}
			return nil, fmt.Errorf("[%d].name: keys[%d] goes by the same name", i, j)
		}
		keys, digests, ids = append(keys, k), append(digests, d), append(ids, auth.ID(k.Name, d))
	}
	return keys, nil
}

// keyObject reads one entry of keys. Each error starts with ".member: " or ": ".
func keyObject(raw jsontext.Value) (k Key, err error) {
	var members map[string]jsontext.Value
	if raw.Kind() != '{' || json.Unmarshal(raw, &members) != nil {
		return k, errors.New(": want an object {name, key, …}")
	}
	for _, m := range slices.Sorted(maps.Keys(members)) {
		v := members[m]
		switch m {
		case "name":
			k.Name, err = keyName(v)
		case "key":
			if v.Kind() != '"' || json.Unmarshal(v, &k.Key) != nil {
				err = errors.New("want a string; quote the key")
			} else if k.Key = strings.TrimSpace(k.Key); k.Key == "" {
				err = errors.New("empty")
			} else {
				_, err = auth.Digest(k.Key)
			}
		case "requests_per_minute":
			k.RequestsPerMinute, err = limit(v)
		case "tokens_per_minute":
			k.TokensPerMinute, err = limit(v)
		case "tokens_per_day":
			k.TokensPerDay, err = limit(v)
		case "usd_per_day":
			k.USDPerDay, err = usdLimit(v)
		case "usd_per_month":
			k.USDPerMonth, err = usdLimit(v)
		case "audit":
			if v.Kind() != '"' || json.Unmarshal(v, &k.Audit) != nil {
				err = errors.New("want off, metadata or full")
			} else if _, perr := audit.ParseLevel(k.Audit); perr != nil {
				err = errors.New("want off, metadata or full")
			}
		default:
			known, merr := k.member(m, v)
			if !known {
				return k, unknownKeyMember(m)
			}
			if merr != nil {
				err = errors.New(keyDefaultWants[m]) // the value, which may be a key, not quoted
			}
		}
		if err != nil {
			return k, fmt.Errorf(".%s: %w", m, err)
		}
	}
	if k.Key == "" {
		return k, errors.New(".key: missing")
	}
	return k, nil
}

// unknownKeyMember is the error of a member a keys entry does not take. It names the member
// only when it reads as a setting's name (lower-case words joined by '_', one of them a word
// of a keys entry's member, an alias object's or a setting's, as prompt_caching or
// requests_per_minutes): a key written where a member's name goes would reach the terminal.
func unknownKeyMember(m string) error {
	wants := strings.Join(keyMembers, ", ")
	if !settingLike(m) {
		return fmt.Errorf(": an unknown member, not quoted because it could be a key; a keys entry takes %s", wants)
	}
	return fmt.Errorf(".%s: unknown member; a keys entry takes %s", m, wants)
}

// settingLike reports whether m is lower-case words joined by '_' with a word of a setting's
// name among them.
func settingLike(m string) bool {
	if strings.Trim(m, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return false
	}
	names := slices.Concat(keyMembers, aliasKeys)
	for _, s := range table(new(Config)) {
		names = append(names, s.key)
	}
	for _, word := range strings.Split(m, "_") {
		for _, name := range names {
			if word != "" && slices.Contains(strings.Split(name, "_"), word) {
				return true
			}
		}
	}
	return false
}

// keyDefaultWants say what each default of a keys entry takes, without quoting the value
// given, unlike the alias objects' errors.
var keyDefaultWants = map[string]string{
	"parallel_tool_calls": "want true or false",
	"max_tool_rounds":     fmt.Sprintf("want a whole number from 0 to %d", math.MaxInt32),
	"reasoning_effort":    "want one of " + strings.Join(reasoningEfforts, ", "),
	"tool_validation":     "want off, report or repair",
}

// keyName reads a key's name: 1 to 64 letters, digits, '.', '_' or '-', so that it is a
// safe label, log field and Redis key part, and within Bedrock's requestMetadata set.
func keyName(v jsontext.Value) (string, error) {
	var name string
	if v.Kind() != '"' || json.Unmarshal(v, &name) != nil {
		return "", errors.New("want a string")
	}
	ok := name != "" && len(name) <= maxKeyName
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}
	if !ok {
		return "", fmt.Errorf("want 1 to %d letters, digits, '.', '_' or '-'", maxKeyName)
	}
	return name, nil
}

// limit reads a limit: a whole number, 0 for none.
func limit(v jsontext.Value) (int64, error) {
	var n int64
	switch {
	case v.Kind() != '0' || json.Unmarshal(v, &n) != nil:
		return 0, errors.New("want a whole number, 0 or more (0: no limit)")
	case n < 0:
		return 0, fmt.Errorf("must be at least 0, got %d", n)
	}
	return n, nil
}

// Bounds of a dollar limit: the quota counts micro-dollars, so a smaller budget would be
// none, and a larger one than maxUSD would not fit its counter.
const (
	minUSD = 0.000001
	maxUSD = 1e9
)

// usdLimit reads a dollar limit: a number of US dollars, 0 for none, else from minUSD to
// maxUSD.
func usdLimit(v jsontext.Value) (float64, error) {
	var usd float64
	switch {
	case v.Kind() != '0' || json.Unmarshal(v, &usd) != nil:
		return 0, errors.New("want a number of US dollars, 0 or more (0: no limit)")
	case usd != 0 && !(usd >= minUSD && usd <= maxUSD):
		return 0, fmt.Errorf("must be 0 (no limit) or from %s to %s US dollars, got %v",
			strconv.FormatFloat(minUSD, 'f', -1, 64), strconv.FormatFloat(maxUSD, 'f', -1, 64), usd)
	}
	return usd, nil
}

// member reads one of the defaults keys and alias objects share into d. known is false
// for any other member.
func (d *Defaults) member(name string, v jsontext.Value) (known bool, err error) {
	switch name {
	case "parallel_tool_calls":
		var b bool
		if err = json.Unmarshal(v, &b); err != nil {
			err = fmt.Errorf("want true or false, got %s", v)
		}
		d.ParallelToolCalls = &b
	case "max_tool_rounds":
		var n int
		switch {
		case json.Unmarshal(v, &n) != nil:
			err = fmt.Errorf("want a whole number, got %s", v)
		case n < 0, n > math.MaxInt32:
			err = fmt.Errorf("must be from 0 to %d, got %d", math.MaxInt32, n)
		}
		d.MaxToolRounds = &n
	case "reasoning_effort":
		var text string
		if text, err = scalarText(v); err == nil && !slices.Contains(reasoningEfforts, text) {
			err = fmt.Errorf("%q is not one of %s", text, strings.Join(reasoningEfforts, ", "))
		}
		d.ReasoningEffort = text
	case "tool_validation":
		var text string
		if text, err = scalarText(v); err == nil {
			d.ToolValidation, err = parseValidation(text)
		}
	default:
		return false, nil
	}
	return true, err
}

// apiKeys checks each key as the keyring will read it; its errors name the key by its place
// in the list, never quote it.
func apiKeys(keys []string) error {
	for i, k := range keys {
		if _, err := auth.Digest(k); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

// readKeysFile reads APIKeysFile into FileKeys: one entry a line, the key or
// "sha256:<hex>" of it, trimmed; blank lines are skipped, and so are lines starting with #
// (after spaces), which alone are comments: a key may hold #. A line with spaces or tabs
// inside is refused rather than read as a key with a note ("key # prod" would be a key
// ending in a note). Errors name the line, never quote it: it may hold a key. The warning,
// when not "", says who else may read the file.
func (c *Config) readKeysFile() (warning string, errs []error) {
	raw, err := os.ReadFile(c.APIKeysFile)
	if err != nil {
		return "", []error{err}
	}
	// A byte-order mark, which Windows editors write, would start the first key.
	raw = bytes.TrimPrefix(raw, []byte("\ufeff"))
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.IndexFunc(line, unicode.IsSpace) >= 0 {
			errs = append(errs, fmt.Errorf("line %d: whitespace inside a key; a line holds one key, and # starts a comment only at the start of a line", i+1))
		} else if _, err := auth.Digest(line); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", i+1, err))
		} else {
			c.FileKeys = append(c.FileKeys, line)
		}
	}
	if len(errs) == 0 && len(c.FileKeys) == 0 {
		errs = append(errs, fmt.Errorf("%s holds no key", c.APIKeysFile))
	}
	warning, err = exposure(c.APIKeysFile, plaintext(c.FileKeys))
	if err != nil {
		errs = append(errs, err)
	}
	return warning, errs
}

// exposure checks who else may use a file that holds keys, or, the YAML file, may hold
// them. Writable by every user of the host stops startup, digests or not: anyone could add
// a key of their own. Readable by every user is a warning when it holds keys in plaintext.
// os.Stat follows symlinks: Kubernetes mounts Secrets and ConfigMaps through them, and the
// target's mode is the one that counts.
func exposure(path string, plaintext bool) (warning string, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	switch mode := info.Mode().Perm(); {
	case mode&0o002 != 0:
		return "", fmt.Errorf("%s is writable by every user of this host, who could add a key; chmod 600 or 640", path)
	case plaintext && mode&0o004 != 0:
		return fmt.Sprintf("%s holds keys in plaintext and is readable by every user of this host; chmod 600 or 640, or store sha256:<hex> of each key", path), nil
	}
	return "", nil
}

// plaintext reports whether any of keys is written as itself rather than as its digest.
func plaintext(keys []string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return !strings.HasPrefix(k, "sha256:") })
}
