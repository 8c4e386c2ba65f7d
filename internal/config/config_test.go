package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Load(nil, env(nil))
	require.NoError(t, err)
	assert.Equal(t, Config{
		HTTPAddr:           ":8080",
		GRPCAddr:           ":9090",
		DefaultModel:       DefaultModel,
		LogLevel:           "info",
		LogFormat:          "json",
		MaxTools:           128,
		MaxMessages:        1000,
		MaxMessageBytes:    4 << 20,
		MaxBodyBytes:       10 << 20,
		UpstreamTimeout:    10 * time.Minute,
		MaxConcurrent:      4096,
		DrainTimeout:       20 * time.Second,
		StreamWriteTimeout: 30 * time.Second,
		BodyReadTimeout:    30 * time.Second,
		ParallelToolCalls:  true,
		ParallelMemoryTTL:  24 * time.Hour,
		ReasoningCache:     ReasoningCache{MaxEntries: 10000, MaxBytes: 64 << 20, TTL: time.Hour},
		PromptCaching:      CachingAuto,
		ToolValidation:     ValidationReport,
		MaxRepairAttempts:  2,
		SchemaLimits: toolcheck.Limits{MaxBytes: 256 << 10, MaxSubschemas: 1000, MaxMembers: 1000, MaxDepth: 32, MaxRefDepth: 32,
			MaxPatternSize: 16 << 10, CompileBudget: 2500},
		CacheReadWeight:      0.1,
		RedisTimeout:         100 * time.Millisecond,
		RedisPingInterval:    2 * time.Second,
		DefaultMaxTokens:     4096,
		ResponsesTTL:         7 * 24 * time.Hour,
		ResponsesMaxBytes:    1 << 20,
		ResponsesKeyMaxBytes: 256 << 20,
		ResponsesMemoryBytes: 256 << 20,
		Audit:                "off",
		AuditDSN:             DefaultAuditDSN,
		AuditMaxContentBytes: 256 << 10,
		AuditRetentionDays:   30,
	}, cfg)
}

// TestPrecedence: for each kind of value, the default, then the file over it, the
// environment over the file, and flags over the environment.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	type strs = []string
	type aliases = map[string][]Target
	tests := []struct {
		name                     string
		yaml                     string
		env                      map[string]string
		flags                    []string
		get                      func(Config) any
		def, file, fromEnv, flag any
	}{
		{
			name: "string", yaml: "default_model: acme.file-model",
			env: map[string]string{"GATEWAY_DEFAULT_MODEL": "acme.env-model"}, flags: strs{"--default-model", "acme.flag-model"},
			get: func(c Config) any { return c.DefaultModel }, def: DefaultModel, file: "acme.file-model", fromEnv: "acme.env-model", flag: "acme.flag-model",
		},
		{
			name: "int", yaml: "max_tools: 64",
			env: map[string]string{"GATEWAY_MAX_TOOLS": "32"}, flags: strs{"--max-tools=16"},
			get: func(c Config) any { return c.MaxTools }, def: 128, file: 64, fromEnv: 32, flag: 16,
		},
		{
			name: "duration", yaml: "sim_delta_delay: 40ms",
			env: map[string]string{"GATEWAY_SIM_DELTA_DELAY": "2s"}, flags: strs{"--sim-delta-delay", "3m"},
			get: func(c Config) any { return c.Sim.DeltaDelay }, def: time.Duration(0), file: 40 * time.Millisecond, fromEnv: 2 * time.Second, flag: 3 * time.Minute,
		},
		{
			name: "bool", yaml: "sim: true",
			env: map[string]string{"GATEWAY_SIM": "0"}, flags: strs{"--sim"},
			get: func(c Config) any { return c.Sim.Enabled }, def: false, file: true, fromEnv: false, flag: true,
		},
		{
			name: "bool flag set to false", yaml: "sim: false",
			env: map[string]string{"GATEWAY_SIM": "1"}, flags: strs{"--sim=false"},
			get: func(c Config) any { return c.Sim.Enabled }, def: false, file: false, fromEnv: true, flag: false,
		},
		{
			name: "list", yaml: "api_keys: [file-key-1-0123456, file-key-2-0123456]",
			env: map[string]string{"GATEWAY_API_KEYS": "env-key-1-01234567, env-key-2-01234567 ,,"}, flags: strs{"--api-keys", "first-key-012345,second-key-01234", "--api-keys", "third-key-012345"},
			get: func(c Config) any { return c.APIKeys }, def: strs(nil), file: strs{"file-key-1-0123456", "file-key-2-0123456"}, fromEnv: strs{"env-key-1-01234567", "env-key-2-01234567"}, flag: strs{"first-key-012345", "second-key-01234", "third-key-012345"},
		},
		{
			name: "list flag set to empty", yaml: "api_keys: [file-key-1-0123456]",
			env: map[string]string{"GATEWAY_API_KEYS": "env-key-1-01234567"}, flags: strs{"--api-keys="},
			get: func(c Config) any { return c.APIKeys }, def: strs(nil), file: strs{"file-key-1-0123456"}, fromEnv: strs{"env-key-1-01234567"}, flag: strs(nil),
		},
		{
			name: "list separated by ;", yaml: `sim_faults: ["throttle,times=2"]`,
			env:   map[string]string{"GATEWAY_SIM_FAULTS": "internal; truncate,after=2"},
			flags: strs{"--sim-faults", "hang", "--sim-faults", "throttle,times=1;unavailable"},
			get:   func(c Config) any { return c.Sim.Faults }, def: strs(nil), file: strs{"throttle,times=2"},
			fromEnv: strs{"internal", "truncate,after=2"}, flag: strs{"hang", "throttle,times=1", "unavailable"},
		},
		{
			name: "redis_url", yaml: "redis_url: redis://file-cache:6379/0",
			env: map[string]string{"GATEWAY_REDIS_URL": "rediss://:pw@env-cache:6380"}, flags: strs{"--redis-url", "redis://flag-cache"},
			get: func(c Config) any { return c.RedisURL }, def: "", file: "redis://file-cache:6379/0", fromEnv: "rediss://:pw@env-cache:6380", flag: "redis://flag-cache",
		},
		{
			// YAML reads an unquoted off as false.
			name: "prompt_caching", yaml: "prompt_caching: off",
			env: map[string]string{"GATEWAY_PROMPT_CACHING": "auto"}, flags: strs{"--prompt-caching=off"},
			get: func(c Config) any { return c.PromptCaching }, def: CachingAuto, file: CachingOff, fromEnv: CachingAuto, flag: CachingOff,
		},
		{
			// An object setting: each source sets the members it names, the rest keep theirs.
			name: "schema_limits", yaml: "schema_limits: {max_bytes: 1048576, max_subschemas: 4000}",
			env: map[string]string{"GATEWAY_SCHEMA_LIMITS": "max_subschemas=3000"}, flags: strs{"--schema-limits", "max_depth=40,compile_budget=9000"},
			get: func(c Config) any {
				return [4]int{c.SchemaLimits.MaxBytes, c.SchemaLimits.MaxSubschemas, c.SchemaLimits.MaxDepth, c.SchemaLimits.CompileBudget}
			},
			def: [4]int{256 << 10, 1000, 32, 2500}, file: [4]int{1 << 20, 4000, 32, 2500}, fromEnv: [4]int{1 << 20, 3000, 32, 2500},
			flag: [4]int{1 << 20, 3000, 40, 9000},
		},
		{
			name: "map", yaml: "model_aliases: {a: acme.model-a, b: 'arn:aws:bedrock:us-east-1:1:x/y'}",
			env:   map[string]string{"GATEWAY_MODEL_ALIASES": "c=acme.model-c, d = acme.model-d"},
			flags: strs{"--model-aliases", "e=acme.model-e", "--model-aliases=f=acme.model-f"},
			get:   func(c Config) any { return c.ModelAliases }, def: aliases(nil),
			file:    aliases{"a": {{ModelID: "acme.model-a"}}, "b": {{ModelID: "arn:aws:bedrock:us-east-1:1:x/y"}}},
			fromEnv: aliases{"c": {{ModelID: "acme.model-c"}}, "d": {{ModelID: "acme.model-d"}}}, flag: aliases{"e": {{ModelID: "acme.model-e"}}, "f": {{ModelID: "acme.model-f"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, tt.yaml)
			withFile := map[string]string{"GATEWAY_CONFIG": file}
			for k, v := range tt.env {
				withFile[k] = v
			}
			steps := []struct {
				name string
				args []string
				env  map[string]string
				want any
			}{
				{"default", nil, nil, tt.def},
				{"file", []string{"--config", file}, nil, tt.file},
				{"env over file", nil, withFile, tt.fromEnv},
				{"flag over env", tt.flags, withFile, tt.flag},
			}
			for _, step := range steps {
				cfg, err := Load(step.args, env(step.env))
				require.NoError(t, err, step.name)
				assert.Equal(t, step.want, tt.get(cfg), step.name)
			}
		})
	}
}

// TestConfigFilePrecedence: --config beats GATEWAY_CONFIG, like every flag its variable.
func TestConfigFilePrecedence(t *testing.T) {
	t.Parallel()
	fromFlag, fromEnv := writeFile(t, "max_tools: 1"), writeFile(t, "max_tools: 2")
	cfg, err := Load([]string{"--config", fromFlag}, env(map[string]string{"GATEWAY_CONFIG": fromEnv}))
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.MaxTools)
	assert.Equal(t, fromFlag, cfg.File)
}

// TestLoadErrors: each error names the key and where its value came from. FILE in want
// stands for the YAML file's path.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	type strs = []string
	type vars = map[string]string
	tests := []struct {
		name string
		args []string
		env  map[string]string
		yaml string // when set, written to a file given with --config
		want string
	}{
		{name: "unknown flag", args: strs{"--nope"}, want: "flag provided but not defined: -nope"},
		{name: "stray argument", args: strs{"serve"}, want: `unexpected argument "serve"`},

		// Values that do not parse, each kind from each source.
		{name: "int", env: vars{"GATEWAY_MAX_TOOLS": "ten"}, want: `max_tools: "ten" is not a whole number (from GATEWAY_MAX_TOOLS)`},
		{name: "duration", args: strs{"--upstream-timeout", "10x"}, want: `upstream_timeout: "10x" is not a duration like "30s" (from --upstream-timeout)`},
		{name: "bool", env: vars{"GATEWAY_SIM": "yes please"}, want: `sim: "yes please" is not 1, 0, true or false (from GATEWAY_SIM)`},
		{name: "bool flag", args: strs{"--sim=maybe"}, want: `sim: "maybe" is not 1, 0, true or false (from --sim)`},
		{name: "map item", args: strs{"--model-aliases", "sonnet"}, want: `model_aliases: "sonnet" is not name=id (from --model-aliases)`},
		{name: "int in file", yaml: "max_messages: 1.5", want: `max_messages: "1.5" is not a whole number (from FILE)`},
		{name: "duration in file", yaml: "upstream_timeout: 30", want: `upstream_timeout: "30" is not a duration like "30s" (from FILE)`},
		{name: "list in file", yaml: "api_keys: sk-live-0123456789", want: `api_keys: want a list of strings, got a string (from FILE)`}, // not quoted: it may be a key
		{name: "map in file", yaml: "model_aliases: [a]", want: `model_aliases: want a mapping of names to model ids or alias objects, got ["a"] (from FILE)`},
		{name: "prompt_caching", env: vars{"GATEWAY_PROMPT_CACHING": "on"}, want: `prompt_caching: "on" is not off or auto (from GATEWAY_PROMPT_CACHING)`},
		{name: "prompt_caching yes in file", yaml: "prompt_caching: yes", want: `prompt_caching: "true" is not off or auto (from FILE)`},

		// Alias objects and their targets (docs/PROTOCOL.md 14.1, 14.4).
		{name: "alias with too many targets", yaml: "model_aliases:\n  agent:\n    targets: [{model_id: a}, {model_id: b}, {model_id: c}, {model_id: d}, {model_id: e}, {model_id: f}, {model_id: g}, {model_id: h}, {model_id: i}]",
			want: `model_aliases: agent.targets: 9 given; an alias takes 1 to 8 (from FILE)`},
		{name: "alias target with a bad region", yaml: "model_aliases: {agent: {targets: [{model_id: a}, {model_id: a, region: eu_west_1}]}}",
			want: `model_aliases: agent.targets[1].region: want an AWS region like us-east-1, got "eu_west_1" (from FILE)`},
		{name: "alias target with an empty region", yaml: "model_aliases: {agent: {targets: [{model_id: a, region: ''}]}}",
			want: `model_aliases: agent.targets[0].region: want an AWS region like us-east-1, got "" (from FILE)`},
		{name: "alias target region of another kind", yaml: "model_aliases: {agent: {targets: [{model_id: a, region: [us-east-1]}]}}",
			want: `model_aliases: agent.targets[0].region: want an AWS region like us-east-1, got ["us-east-1"] (from FILE)`},
		{name: "alias targets repeated", yaml: "model_aliases: {agent: {targets: [{model_id: a, region: us-east-1}, {model_id: b}, {model_id: a, region: us-east-1}]}}",
			want: `model_aliases: agent.targets[2]: the same as targets[0] (from FILE)`},
		{name: "alias targets not a list", yaml: "model_aliases: {agent: {targets: {model_id: a}}}",
			want: `model_aliases: agent.targets: want a list of {model_id: …, region: …}, got {"model_id":"a"} (from FILE)`},
		{name: "alias without targets", yaml: "model_aliases: {agent: {max_tool_rounds: 3}}",
			want: `model_aliases: agent.targets: missing; give a list of {model_id: <Bedrock model id>, region: <AWS region, optional>} (from FILE)`},
		{name: "alias with no target", yaml: "model_aliases: {agent: {targets: []}}",
			want: `model_aliases: agent.targets: 0 given; an alias takes 1 to 8 (from FILE)`},
		{name: "alias target without model_id", yaml: "model_aliases: {agent: {targets: [{model_id: a}, {region: us-west-2}]}}",
			want: `model_aliases: agent.targets[1].model_id: missing (from FILE)`},
		{name: "alias target with an empty model_id", yaml: "model_aliases: {agent: {targets: [{model_id: ''}]}}",
			want: `model_aliases: agent.targets[0].model_id: want a Bedrock model id, got "" (from FILE)`},
		{name: "alias not a model id", yaml: "model_aliases: {fast: amazon.nova-lite-v1:0, smart: not-a-model}",
			want: `model_aliases: smart: "not-a-model" is not a Bedrock model id; want provider.model (anthropic.claude-sonnet-4-20250514-v1:0), an inference profile (us.anthropic.claude-sonnet-4-20250514-v1:0) or an ARN (from FILE)`},
		{name: "alias flag not a model id", args: strs{"--model-aliases", "fast=gpt-4o"},
			want: `model_aliases: fast: "gpt-4o" is not a Bedrock model id; want provider.model (anthropic.claude-sonnet-4-20250514-v1:0), an inference profile (us.anthropic.claude-sonnet-4-20250514-v1:0) or an ARN (from --model-aliases)`},
		{name: "alias target not a model id", yaml: "model_aliases: {agent: {targets: [{model_id: amazon.nova-pro-v1:0}, {model_id: gpt-4.1}]}}",
			want: `model_aliases: agent.targets[1].model_id: "gpt-4.1" is not a Bedrock model id; want provider.model (anthropic.claude-sonnet-4-20250514-v1:0), an inference profile (us.anthropic.claude-sonnet-4-20250514-v1:0) or an ARN (from FILE)`},
		{name: "default_model not a model id", env: vars{"GATEWAY_DEFAULT_MODEL": "gpt-4o"},
			want: `default_model: "gpt-4o" is neither an alias of model_aliases nor a Bedrock model id; want provider.model (anthropic.claude-sonnet-4-20250514-v1:0), an inference profile (us.anthropic.claude-sonnet-4-20250514-v1:0) or an ARN (from GATEWAY_DEFAULT_MODEL)`},
		{name: "alias target with an unknown key", yaml: "model_aliases: {agent: {targets: [{model: a}]}}",
			want: `model_aliases: agent.targets[0].model: unknown key; a target takes model_id and region (from FILE)`},
		{name: "alias with an unknown key", yaml: "model_aliases: {agent: {targets: [{model_id: a}], max_repair_attempts: 3}}",
			want: `model_aliases: agent.max_repair_attempts: unknown key; an alias object takes targets, prompt_caching, parallel_tool_calls, max_tool_rounds, reasoning_effort, tool_validation (from FILE)`},
		{name: "alias tool_validation", yaml: "model_aliases: {agent: {targets: [{model_id: a}], tool_validation: fix}}",
			want: `model_aliases: agent.tool_validation: "fix" is not off, report or repair (from FILE)`},
		{name: "tool_validation", env: vars{"GATEWAY_TOOL_VALIDATION": "strict"}, want: `tool_validation: "strict" is not off, report or repair (from GATEWAY_TOOL_VALIDATION)`},
		{name: "tool_validation on in file", yaml: "tool_validation: on", want: `tool_validation: "true" is not off, report or repair (from FILE)`},
		{name: "alias prompt_caching", yaml: "model_aliases: {agent: {targets: [{model_id: a}], prompt_caching: always}}",
			want: `model_aliases: agent.prompt_caching: "always" is not off or auto (from FILE)`},
		{name: "alias parallel_tool_calls", yaml: "model_aliases: {agent: {targets: [{model_id: a}], parallel_tool_calls: sometimes}}",
			want: `model_aliases: agent.parallel_tool_calls: want true or false, got "sometimes" (from FILE)`},
		{name: "alias max_tool_rounds", yaml: "model_aliases: {agent: {targets: [{model_id: a}], max_tool_rounds: -1}}",
			want: `model_aliases: agent.max_tool_rounds: must be from 0 to 2147483647, got -1 (from FILE)`},
		{name: "alias max_tool_rounds fraction", yaml: "model_aliases: {agent: {targets: [{model_id: a}], max_tool_rounds: 2.5}}",
			want: `model_aliases: agent.max_tool_rounds: want a whole number, got 2.5 (from FILE)`},
		{name: "alias reasoning_effort", yaml: "model_aliases: {agent: {targets: [{model_id: a}], reasoning_effort: extreme}}",
			want: `model_aliases: agent.reasoning_effort: "extreme" is not one of none, minimal, low, medium, high, xhigh, max (from FILE)`},
		{name: "alias of another kind", yaml: "model_aliases: {agent: [a]}",
			want: `model_aliases: agent: want a model id or an alias object, got ["a"] (from FILE)`},
		{name: "scalar in file", yaml: "max_tools: [1]", want: `max_tools: want a single value, got [1] (from FILE)`},
		{name: "number", env: vars{"GATEWAY_CACHE_READ_WEIGHT": "a tenth"}, want: `cache_read_weight: "a tenth" is not a number (from GATEWAY_CACHE_READ_WEIGHT)`},

		// keys (docs/PROTOCOL.md 14.1): every error names the entry and member, and never
		// quotes a name or a key, which may be a key written in the wrong place.
		{name: "keys not a list", yaml: "keys: {name: ci}", want: `keys: want a list of {name, key, …} objects (from FILE)`},
		{name: "keys entry not an object", yaml: "keys: [s3cret]", want: `keys[0]: want an object {name, key, …} (from FILE)`},
		{name: "keys without key", yaml: "keys: [{name: ci}]", want: `keys[0].key: missing (from FILE)`},
		{name: "keys key empty", yaml: "keys: [{key: ' '}]", want: `keys[0].key: empty (from FILE)`},
		{name: "keys key not a string", yaml: "keys: [{key: 12345}]", want: `keys[0].key: want a string; quote the key (from FILE)`},
		{name: "keys bad digest", yaml: "keys: [{key: first-key-012345}, {key: 'sha256:abc'}]", want: `keys[1].key: sha256: wants 64 hex digits (from FILE)`},
		{name: "keys name", yaml: "keys: [{name: 'c i', key: first-key-012345}]", want: `keys[0].name: want 1 to 64 letters, digits, '.', '_' or '-' (from FILE)`},
		{name: "keys name empty", yaml: "keys: [{name: '', key: first-key-012345}]", want: `keys[0].name: want 1 to 64 letters, digits, '.', '_' or '-' (from FILE)`},
		{name: "keys name too long", yaml: "keys: [{name: " + strings.Repeat("n", 65) + ", key: first-key-012345}]", want: `keys[0].name: want 1 to 64 letters, digits, '.', '_' or '-' (from FILE)`},
		{name: "keys name not a string", yaml: "keys: [{name: [ci], key: first-key-012345}]", want: `keys[0].name: want a string (from FILE)`},
		{name: "keys same name", yaml: "keys: [{name: ci, key: first-key-012345}, {name: cd, key: second-key-01234}, {name: ci, key: third-key-012345}]", want: `keys[2].name: keys[0] goes by the same name (from FILE)`},
		{name: "keys same key", yaml: "keys: [{name: ci, key: first-key-012345}, {name: cd, key: 'sha256:" + sha256Hex("first-key-012345") + "'}]", want: `keys[1].key: the same key as keys[0] (from FILE)`},
		{name: "keys name of another's digest", yaml: "keys: [{name: '" + sha256Hex("first-key-012345")[:8] + "', key: second-key-01234}, {key: first-key-012345}]",
			want: `keys[1]: its SHA-256 starts as that of keys[0], whose name it would take; give it a name (from FILE)`},
		{name: "keys unknown member", yaml: "keys: [{key: first-key-012345, prompt_caching: off}]",
			want: `keys[0].prompt_caching: unknown member; a keys entry takes name, key, requests_per_minute, tokens_per_minute, tokens_per_day, usd_per_day, usd_per_month, parallel_tool_calls, max_tool_rounds, tool_validation, reasoning_effort, audit (from FILE)`},
		{name: "keys a key as a member's name", yaml: "keys: [{key: first-key-012345, sk-live-secret: 1}]",
			want: `keys[0]: an unknown member, not quoted because it could be a key; a keys entry takes name, key, requests_per_minute, tokens_per_minute, tokens_per_day, usd_per_day, usd_per_month, parallel_tool_calls, max_tool_rounds, tool_validation, reasoning_effort, audit (from FILE)`},
		{name: "keys audit", yaml: "keys: [{key: first-key-012345, audit: all}]", want: `keys[0].audit: want off, metadata or full (from FILE)`},
		{name: "keys a misspelt member", yaml: "keys: [{key: first-key-012345, requests_per_minutes: 1}]",
			want: `keys[0].requests_per_minutes: unknown member; a keys entry takes name, key, requests_per_minute, tokens_per_minute, tokens_per_day, usd_per_day, usd_per_month, parallel_tool_calls, max_tool_rounds, tool_validation, reasoning_effort, audit (from FILE)`},
		{name: "keys a lower-case key as a member's name", yaml: "keys: [{key: first-key-012345, our_team_secret_abc: 1}]",
			want: `keys[0]: an unknown member, not quoted because it could be a key; a keys entry takes name, key, requests_per_minute, tokens_per_minute, tokens_per_day, usd_per_day, usd_per_month, parallel_tool_calls, max_tool_rounds, tool_validation, reasoning_effort, audit (from FILE)`},
		{name: "keys requests_per_minute", yaml: "keys: [{key: first-key-012345, requests_per_minute: -1}]", want: `keys[0].requests_per_minute: must be at least 0, got -1 (from FILE)`},
		{name: "keys tokens_per_minute", yaml: "keys: [{key: first-key-012345}, {key: second-key-01234}, {key: third-key-012345, tokens_per_minute: 1.5}]", want: `keys[2].tokens_per_minute: want a whole number, 0 or more (0: no limit) (from FILE)`},
		{name: "keys tokens_per_day", yaml: "keys: [{key: first-key-012345, tokens_per_day: '100'}]", want: `keys[0].tokens_per_day: want a whole number, 0 or more (0: no limit) (from FILE)`},
		{name: "keys tool_validation", yaml: "keys: [{key: first-key-012345, tool_validation: sk-live-secret}]", want: `keys[0].tool_validation: want off, report or repair (from FILE)`},
		{name: "keys parallel_tool_calls", yaml: "keys: [{key: first-key-012345, parallel_tool_calls: sk-live-secret}]", want: `keys[0].parallel_tool_calls: want true or false (from FILE)`},
		{name: "keys max_tool_rounds", yaml: "keys: [{key: first-key-012345, max_tool_rounds: -3}]", want: `keys[0].max_tool_rounds: want a whole number from 0 to 2147483647 (from FILE)`},
		{name: "keys reasoning_effort", yaml: "keys: [{key: first-key-012345, reasoning_effort: sk-live-secret}]", want: `keys[0].reasoning_effort: want one of none, minimal, low, medium, high, xhigh, max (from FILE)`},
		{name: "keys usd_per_day negative", yaml: "keys: [{key: first-key-012345, usd_per_day: -5}]", want: `keys[0].usd_per_day: must be 0 (no limit) or from 0.000001 to 1000000000 US dollars, got -5 (from FILE)`},
		{name: "keys usd_per_day below a micro-dollar", yaml: "keys: [{key: first-key-012345, usd_per_day: 0.0000001}]", want: `keys[0].usd_per_day: must be 0 (no limit) or from 0.000001 to 1000000000 US dollars, got 1e-07 (from FILE)`},
		{name: "keys usd_per_month too large", yaml: "keys: [{key: first-key-012345, usd_per_month: 1e10}]", want: `keys[0].usd_per_month: must be 0 (no limit) or from 0.000001 to 1000000000 US dollars, got 1e+10 (from FILE)`},
		{name: "keys usd_per_month not a number", yaml: "keys: [{key: first-key-012345, usd_per_month: sk-live-secret}]", want: `keys[0].usd_per_month: want a number of US dollars, 0 or more (0: no limit) (from FILE)`},
		{name: "keys usd_per_month out of range", yaml: "keys: [{key: first-key-012345, usd_per_month: 1e400}]", want: `keys[0].usd_per_month: want a number of US dollars, 0 or more (0: no limit) (from FILE)`},
		{name: "keys from the environment", env: vars{"GATEWAY_KEYS": "first-key-012345"}, want: `keys: only the YAML file (--config) sets it (from GATEWAY_KEYS)`},

		// Prices (docs/PROTOCOL.md 17.1).
		{name: "prices not a mapping", yaml: "prices: [amazon.nova-pro-v1:0]", want: `prices: want a mapping of model ids to {input, output, cache_read, cache_write}, US dollars per million tokens (from FILE)`},
		{name: "prices of no model id", yaml: "prices: {gpt-4o: {input: 1, output: 1, cache_read: 0, cache_write: 0}}", want: `prices["gpt-4o"]: not a Bedrock model id; ` + modelIDShapes + ` (from FILE)`},
		{name: "prices entry not an object", yaml: "prices: {amazon.nova-pro-v1:0: 0.8}", want: `prices["amazon.nova-pro-v1:0"]: want an object {input, output, cache_read, cache_write} (from FILE)`},
		{name: "prices negative", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: -0.8, output: 3.2, cache_read: 0.2, cache_write: 0.8}", want: `prices["amazon.nova-pro-v1:0"].input: want US dollars per million tokens, from 0 to 1000000, got -0.8 (from FILE)`},
		{name: "prices too large", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: 0.8, output: 1e300, cache_read: 0.2, cache_write: 0.8}", want: `prices["amazon.nova-pro-v1:0"].output: want US dollars per million tokens, from 0 to 1000000, got 1e+300 (from FILE)`},
		{name: "prices beyond a float", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: 0.8, output: 1e400, cache_read: 0.2, cache_write: 0.8}", want: `prices["amazon.nova-pro-v1:0"].output: want US dollars per million tokens, from 0 to 1000000, got "1e400" (from FILE)`},
		{name: "prices not a number", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: cheap, output: 3.2, cache_read: 0.2, cache_write: 0.8}", want: `prices["amazon.nova-pro-v1:0"].input: want US dollars per million tokens, from 0 to 1000000, got "cheap" (from FILE)`},
		{name: "prices unknown member", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: 0.8, output: 3.2, cached: 0.2}", want: `prices["amazon.nova-pro-v1:0"].cached: unknown member; a price takes input, output, cache_read, cache_write (from FILE)`},
		{name: "prices member missing", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: 0.8, output: 3.2, cache_read: 0.2}", want: `prices["amazon.nova-pro-v1:0"].cache_write: missing; give input, output, cache_read, cache_write (0 for a model without prompt caching) (from FILE)`},
		{name: "prices infinite", yaml: "prices:\n  amazon.nova-pro-v1:0: {input: .inf, output: 3.2, cache_read: 0.2, cache_write: 0.8}", want: "config: FILE: json: unsupported value: +Inf (from --config)"},
		{name: "prices from the environment", env: vars{"GATEWAY_PRICES": "amazon.nova-pro-v1:0=1"}, want: `prices: only the YAML file (--config) sets it (from GATEWAY_PRICES)`},
		{name: "keys flag", args: strs{"--keys", "first-key-012345"}, want: "flag provided but not defined: -keys"},

		// Values that parse but fail their check: every check of the table.
		{name: "max_tools", env: vars{"GATEWAY_MAX_TOOLS": "0"}, want: `max_tools: must be at least 1, got 0 (from GATEWAY_MAX_TOOLS)`},
		{name: "max_messages", yaml: "max_messages: 0", want: `max_messages: must be at least 1, got 0 (from FILE)`},
		{name: "max_message_bytes", args: strs{"--max-message-bytes=-1"}, want: `max_message_bytes: must be at least 1, got -1 (from --max-message-bytes)`},
		{name: "max_body_bytes", env: vars{"GATEWAY_MAX_BODY_BYTES": "0"}, want: `max_body_bytes: must be at least 1, got 0 (from GATEWAY_MAX_BODY_BYTES)`},
		{name: "max_concurrent", args: strs{"--max-concurrent", "0"}, want: `max_concurrent: must be at least 1, got 0 (from --max-concurrent)`},
		{name: "upstream_timeout", env: vars{"GATEWAY_UPSTREAM_TIMEOUT": "0s"}, want: `upstream_timeout: must be at least 1ms, got 0s (from GATEWAY_UPSTREAM_TIMEOUT)`},
		{name: "drain_timeout", yaml: "drain_timeout: -1s", want: `drain_timeout: must be at least 0s, got -1s (from FILE)`},
		{name: "parallel_memory_ttl", args: strs{"--parallel-memory-ttl", "-1h"}, want: `parallel_memory_ttl: must be at least 0s, got -1h0m0s (from --parallel-memory-ttl)`},
		{name: "stream_write_timeout", args: strs{"--stream-write-timeout=0s"}, want: `stream_write_timeout: must be at least 1ms, got 0s (from --stream-write-timeout)`},
		{name: "body_read_timeout", env: vars{"GATEWAY_BODY_READ_TIMEOUT": "0s"}, want: `body_read_timeout: must be at least 1ms, got 0s (from GATEWAY_BODY_READ_TIMEOUT)`},
		{name: "http_addr", args: strs{"--http-addr", "8080"}, want: `http_addr: "8080" is not host:port like ":8080" (from --http-addr)`},
		{name: "grpc_addr", yaml: "grpc_addr: ''", want: `grpc_addr: "" is not host:port like ":8080" (from FILE)`},
		{name: "admin_addr", args: strs{"--admin-addr", "localhost"}, want: `admin_addr: "localhost" is not host:port like ":8080" (from --admin-addr)`},
		{name: "default_model", args: strs{"--default-model="}, want: `default_model: must not be empty (from --default-model)`},
		{name: "log_level", env: vars{"GATEWAY_LOG_LEVEL": "loud"}, want: `log_level: "loud" is not one of debug, info, warn, error (from GATEWAY_LOG_LEVEL)`},
		{name: "log_format", env: vars{"GATEWAY_LOG_FORMAT": "text"}, want: `log_format: "text" is not one of json, console (from GATEWAY_LOG_FORMAT)`},
		{name: "max_repair_attempts", yaml: "max_repair_attempts: 11", want: `max_repair_attempts: must be from 0 to 10, got 11 (from FILE)`},
		{name: "cache_read_weight", yaml: "cache_read_weight: 1.5", want: `cache_read_weight: must be from 0 to 1, got 1.5 (from FILE)`},
		{name: "cache_read_weight NaN", args: strs{"--cache-read-weight", "NaN"}, want: `cache_read_weight: must be from 0 to 1, got NaN (from --cache-read-weight)`},
		{name: "default_max_tokens", env: vars{"GATEWAY_DEFAULT_MAX_TOKENS": "-1"}, want: `default_max_tokens: must be from 0 to 1000000, got -1 (from GATEWAY_DEFAULT_MAX_TOKENS)`},
		{name: "model_aliases", env: vars{"GATEWAY_MODEL_ALIASES": "sonnet="}, want: `model_aliases: "sonnet"="": both the name and the model id must be set (from GATEWAY_MODEL_ALIASES)`},
		{name: "reasoning_cache", yaml: "reasoning_cache: {max_entries: -1, ttl: 1h}", want: `reasoning_cache: max_entries must be at least 0, got -1 (from FILE)`},
		{name: "reasoning_cache member", args: strs{"--reasoning-cache", "max_entries=5,size=2"}, want: `reasoning_cache: "size" is not max_entries, ttl or max_bytes (from --reasoning-cache)`},
		{name: "reasoning_cache ttl", env: vars{"GATEWAY_REASONING_CACHE": "ttl=0s"}, want: `reasoning_cache: ttl must be above 0, got 0s (from GATEWAY_REASONING_CACHE)`},
		{name: "schema_limits", yaml: "schema_limits: {max_depth: 0}", want: `schema_limits: max_depth must be at least 1, got 0 (from FILE)`},
		{name: "schema_limits member", args: strs{"--schema-limits", "max_depth=40,max_size=2"}, want: `schema_limits: "max_size" is not max_bytes, max_subschemas, max_members, max_depth, max_ref_depth, max_pattern_size or compile_budget (from --schema-limits)`},
		{name: "schema_limits value", env: vars{"GATEWAY_SCHEMA_LIMITS": "max_bytes=1MB"}, want: `schema_limits: max_bytes: "1MB" is not a whole number (from GATEWAY_SCHEMA_LIMITS)`},
		{name: "schema_limits not an object", yaml: "schema_limits: 5", want: `schema_limits: want a mapping like {max_bytes: 262144, max_depth: 32}, got 5 (from FILE)`},
		{name: "redis_url scheme", args: strs{"--redis-url", "http://:hunter2@cache:6379"}, want: `redis_url: want a redis:// or rediss:// URL, got scheme "http" (from --redis-url)`},
		{name: "redis_url", env: vars{"GATEWAY_REDIS_URL": "redis://:hunter2@cache:6379/hunter2"}, want: `redis_url: invalid database number: "xxxxx" (from GATEWAY_REDIS_URL)`},
		{name: "redis_timeout", args: strs{"--redis-timeout", "0s"}, want: `redis_timeout: must be at least 1ms, got 0s (from --redis-timeout)`},
		{name: "redis_ping_interval", env: vars{"GATEWAY_REDIS_PING_INTERVAL": "-1s"}, want: `redis_ping_interval: must be at least 0s, got -1s (from GATEWAY_REDIS_PING_INTERVAL)`},
		{name: "redis_url timeout", yaml: "redis_url: redis://cache:6379?read_timeout=2s", want: `redis_url: read_timeout is set by the gateway: redis_timeout bounds the calls, without retries (from FILE)`},
		{name: "reasoning_seal_keys", env: vars{"GATEWAY_REASONING_SEAL_KEYS": "c2l4dGVlbi1ieXRlLWtleQ==,hunter2hunter2!"}, want: `reasoning_seal_keys: key 1 decodes to 16 bytes; want 32 (openssl rand -base64 32) (from GATEWAY_REASONING_SEAL_KEYS)`},
		{name: "responses_ttl", args: strs{"--responses-ttl", "0s"}, want: `responses_ttl: must be at least 1s, got 0s (from --responses-ttl)`},
		{name: "responses_max_bytes", yaml: "responses_max_bytes: 4194305", want: `responses_max_bytes: must be from 1 to 4194304, got 4194305 (from FILE)`},
		{name: "responses_key_max_bytes", env: vars{"GATEWAY_RESPONSES_KEY_MAX_BYTES": "-1"}, want: `responses_key_max_bytes: must be at least 0, got -1 (from GATEWAY_RESPONSES_KEY_MAX_BYTES)`},
		{name: "responses_memory_bytes", args: strs{"--responses-memory-bytes=-1"}, want: `responses_memory_bytes: must be at least 0, got -1 (from --responses-memory-bytes)`},
		{name: "admin_keys in file", yaml: "admin_keys: admin-key-0123456789", want: `admin_keys: want a list of strings, got a string (from FILE)`},
		{name: "admin_keys", env: vars{"GATEWAY_ADMIN_KEYS": "admin-key-0123456789,short"}, want: `admin_keys[1]: shorter than 16 characters, so it can be guessed; make a key with: openssl rand -hex 32 (from GATEWAY_ADMIN_KEYS)`},
		{name: "audit", yaml: "audit: everything", want: `audit: "everything" is not one of off, metadata, full (from FILE)`},
		{name: "audit_dsn", env: vars{"GATEWAY_AUDIT_DSN": "mysql://root:hunter2@db/audit"}, want: `audit_dsn: want a file path or a URL of scheme postgres, postgresql, sqlite, file; got a URL of another scheme (from GATEWAY_AUDIT_DSN)`},
		{name: "audit_max_content_bytes", args: strs{"--audit-max-content-bytes", "10"}, want: `audit_max_content_bytes: must be at least 1024, got 10 (from --audit-max-content-bytes)`},
		{name: "audit_retention_days", args: strs{"--audit-retention-days=-1"}, want: `audit_retention_days: must be at least 0, got -1 (from --audit-retention-days)`},
		{name: "sim_first_token_delay", args: strs{"--sim-first-token-delay", "-1ms"}, want: `sim_first_token_delay: must be at least 0s, got -1ms (from --sim-first-token-delay)`},
		{name: "sim_delta_delay", yaml: "sim_delta_delay: -5ms", want: `sim_delta_delay: must be at least 0s, got -5ms (from FILE)`},

		// The file is read strictly.
		{name: "unknown key", yaml: "http_adr: ':1'", want: `http_adr: unknown key; gateway --help lists them (from FILE)`},
		{name: "config key", yaml: "config: other.yaml", want: `config: a file cannot name another; use --config or GATEWAY_CONFIG (from FILE)`},
		{name: "key given twice", yaml: "max_tools: 1\nmax_tools: 2", want: "config: FILE: yaml: unmarshal errors:\n  line 2: key \"max_tools\" already set in map (from --config)"},
		{name: "not a mapping", yaml: "- max_tools", want: `config: FILE: want a mapping of settings (key: value) (from --config)`},
		{name: "missing file", env: vars{"GATEWAY_CONFIG": "/nonexistent.yaml"}, want: `config: open /nonexistent.yaml: no such file or directory (from GATEWAY_CONFIG)`},

		// Every bad value is reported, not only the first; a flag over a bad value does not hide it.
		{
			name: "several", yaml: "max_tools: ten\nbogus: 1", args: strs{"--max-tools", "2", "--log-level", "loud"},
			want: "bogus: unknown key; gateway --help lists them (from FILE)\n" +
				`max_tools: "ten" is not a whole number (from FILE)` + "\n" +
				`log_level: "loud" is not one of debug, info, warn, error (from --log-level)`,
		},
	}
	checked := map[string]bool{}
	for _, tt := range tests {
		key, _, _ := strings.Cut(tt.want, ":")
		checked[key] = true
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, want := tt.args, tt.want
			if tt.yaml != "" {
				file := writeFile(t, tt.yaml)
				args = append([]string{"--config", file}, args...)
				want = strings.ReplaceAll(want, "FILE", file)
			}
			_, err := Load(args, env(tt.env))
			assert.EqualError(t, err, want)
		})
	}
	for _, s := range table(new(Config)) {
		assert.True(t, s.v.check == nil || checked[s.key], "no test of the check of %s", s.key)
	}
}

// TestAliasObjects: a model_aliases value may be an object with targets and defaults; the
// string form stays, and flags and variables keep name=id, replacing the file's aliases,
// defaults included.
func TestAliasObjects(t *testing.T) {
	t.Parallel()
	file := writeFile(t, `model_aliases:
  sonnet: us.anthropic.claude-sonnet-4-20250514-v1:0
  agent:
    targets:
      - model_id: us.anthropic.claude-sonnet-4-5-20250929-v1:0
        region: us-east-1
      - {model_id: us.anthropic.claude-sonnet-4-20250514-v1:0}
      - {model_id: eu.anthropic.claude-sonnet-4-20250514-v1:0, region: eu-central-1}
      - {model_id: us.anthropic.claude-sonnet-4-20250514-v1:0, region: us-gov-west-1}
    prompt_caching: off
    parallel_tool_calls: false
    max_tool_rounds: 30
    reasoning_effort: medium
    tool_validation: off
  plain: {targets: [{model_id: amazon.nova-pro-v1:0}]}
`)
	cfg, err := Load([]string{"--config", file}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, map[string][]Target{
		"sonnet": {{ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0"}},
		"agent": {
			{ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Region: "us-east-1"},
			{ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0"},
			{ModelID: "eu.anthropic.claude-sonnet-4-20250514-v1:0", Region: "eu-central-1"},
			{ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0", Region: "us-gov-west-1"},
		},
		"plain": {{ModelID: "amazon.nova-pro-v1:0"}},
	}, cfg.ModelAliases)
	no, thirty := false, 30
	assert.Equal(t, map[string]AliasDefaults{
		"agent": {PromptCaching: CachingOff, Defaults: Defaults{ParallelToolCalls: &no, MaxToolRounds: &thirty, ReasoningEffort: "medium", ToolValidation: ValidationOff}},
		"plain": {},
	}, cfg.AliasDefaults)

	cfg, err = Load([]string{"--config", file, "--model-aliases", "agent=amazon.nova-lite-v1:0"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, map[string][]Target{"agent": {{ModelID: "amazon.nova-lite-v1:0"}}}, cfg.ModelAliases)
	assert.Nil(t, cfg.AliasDefaults, "the flag replaces the file's aliases")
}

// TestKeys: keys entries in the YAML file, with limits and defaults; an entry without
// limits is unlimited (zeros), without a name goes by its digest (Name "").
func TestKeys(t *testing.T) {
	t.Parallel()
	file := writeFile(t, `api_keys: [plain-key-0123456789]
keys:
  - name: ci
    key: sha256:`+sha256Hex("ci-key")+`
    requests_per_minute: 60
    tokens_per_minute: 200000
    tokens_per_day: 5000000
    tool_validation: repair
    parallel_tool_calls: false
    max_tool_rounds: 4
    reasoning_effort: low
    usd_per_day: 2.5
    usd_per_month: 40
    audit: full
  - key: " bare-key-0123456789 "
`)
	cfg, err := Load([]string{"--config", file}, env(nil))
	require.NoError(t, err)
	no, four := false, 4
	assert.Equal(t, []Key{
		{Name: "ci", Key: "sha256:" + sha256Hex("ci-key"), RequestsPerMinute: 60, TokensPerMinute: 200000, TokensPerDay: 5000000,
			USDPerDay: 2.5, USDPerMonth: 40, Audit: "full",
			Defaults: Defaults{ParallelToolCalls: &no, MaxToolRounds: &four, ReasoningEffort: "low", ToolValidation: ValidationRepair}},
		{Key: "bare-key-0123456789"},
	}, cfg.Keys)
	assert.Equal(t, []string{"plain-key-0123456789"}, cfg.APIKeys, "keys come besides api_keys")
}

// TestPrices: prices in the YAML file, by model id or foundation model id, each with its
// four prices; none by default.
func TestPrices(t *testing.T) {
	t.Parallel()
	cfg, err := Load(nil, env(nil))
	require.NoError(t, err)
	assert.Nil(t, cfg.Prices)
	file := writeFile(t, `prices:
  anthropic.claude-sonnet-4-20250514-v1:0: {input: 2.7, output: 13.5, cache_read: 0.27, cache_write: 3.375}
  global.anthropic.claude-sonnet-5-5: {input: 2, output: 10, cache_read: 0.1, cache_write: 2.5}
  "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc": {input: 1, output: 0, cache_read: 0, cache_write: 0}
`)
	cfg, err = Load([]string{"--config", file}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, map[string]pricing.Price{
		"anthropic.claude-sonnet-4-20250514-v1:0":                                  {Input: 2.7, Output: 13.5, CacheRead: 0.27, CacheWrite: 3.375},
		"global.anthropic.claude-sonnet-5-5":                                       {Input: 2, Output: 10, CacheRead: 0.1, CacheWrite: 2.5},
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc": {Input: 1},
	}, cfg.Prices)
}

func sha256Hex(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:])
}

// TestNamesKept: deployments and scripts use these names; a row of the table may not
// rename them.
func TestNamesKept(t *testing.T) {
	t.Parallel()
	var got []string
	for _, s := range table(new(Config)) {
		got = append(got, s.key+" "+s.env()+" --"+s.flag())
	}
	for _, want := range []string{
		"config GATEWAY_CONFIG --config",
		"http_addr GATEWAY_HTTP_ADDR --http-addr",
		"grpc_addr GATEWAY_GRPC_ADDR --grpc-addr",
		"admin_addr GATEWAY_ADMIN_ADDR --admin-addr",
		"api_keys GATEWAY_API_KEYS --api-keys",
		"api_keys_file GATEWAY_API_KEYS_FILE --api-keys-file",
		"default_model GATEWAY_DEFAULT_MODEL --default-model",
		"log_level GATEWAY_LOG_LEVEL --log-level",
		"log_format GATEWAY_LOG_FORMAT --log-format",
		"sim GATEWAY_SIM --sim",
		"model_aliases GATEWAY_MODEL_ALIASES --model-aliases",
		"max_tools GATEWAY_MAX_TOOLS --max-tools",
		"max_messages GATEWAY_MAX_MESSAGES --max-messages",
		"max_message_bytes GATEWAY_MAX_MESSAGE_BYTES --max-message-bytes",
		"max_body_bytes GATEWAY_MAX_BODY_BYTES --max-body-bytes",
		"upstream_timeout GATEWAY_UPSTREAM_TIMEOUT --upstream-timeout",
		"max_concurrent GATEWAY_MAX_CONCURRENT --max-concurrent",
		"drain_timeout GATEWAY_DRAIN_TIMEOUT --drain-timeout",
		"stream_write_timeout GATEWAY_STREAM_WRITE_TIMEOUT --stream-write-timeout",
		"body_read_timeout GATEWAY_BODY_READ_TIMEOUT --body-read-timeout",
		"parallel_memory_ttl GATEWAY_PARALLEL_MEMORY_TTL --parallel-memory-ttl",
		"sim_first_token_delay GATEWAY_SIM_FIRST_TOKEN_DELAY --sim-first-token-delay",
		"sim_delta_delay GATEWAY_SIM_DELTA_DELAY --sim-delta-delay",
		"sim_faults GATEWAY_SIM_FAULTS --sim-faults",
		"prompt_caching GATEWAY_PROMPT_CACHING --prompt-caching",
		"cache_read_weight GATEWAY_CACHE_READ_WEIGHT --cache-read-weight",
		"redis_url GATEWAY_REDIS_URL --redis-url",
		"redis_timeout GATEWAY_REDIS_TIMEOUT --redis-timeout",
		"redis_ping_interval GATEWAY_REDIS_PING_INTERVAL --redis-ping-interval",
		"default_max_tokens GATEWAY_DEFAULT_MAX_TOKENS --default-max-tokens",
	} {
		assert.Contains(t, got, want)
	}
}

// TestHelpListsEverySetting: gateway --help shows each setting with its variable and
// default, the simulator's after the production ones.
func TestHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	PrintFlags(&buf)
	help := buf.String()
	simAt := strings.Index(help, "Simulator settings")
	require.Positive(t, simAt)
	for _, s := range table(new(Config)) {
		if s.fileOnly {
			assert.Contains(t, help, "\n  "+s.key+"  (yaml only, default none)\n", s.key)
			assert.NotContains(t, help, "--"+s.flag()+" ", "%s has no flag", s.key)
			continue
		}
		at := strings.Index(help, "\n  --"+s.flag()+" ")
		require.Positive(t, at, s.key)
		line, _, _ := strings.Cut(help[at+1:], "\n")
		def := s.def
		if def == "" {
			def = "none"
		}
		assert.Contains(t, line, "env "+s.env(), s.key)
		assert.Contains(t, line, "default "+def+")", s.key)
		assert.Equal(t, s.sim, at > simAt, "%s in the wrong group", s.key)
	}
}

// TestDocsListEverySetting: docs/CONFIG.md, the one page that lists the settings (the README
// and PROTOCOL.md section 1 link it), holds a row for each setting (flag, variable, key,
// default), in its group, and none for a setting that does not exist, so it cannot drift
// from the table.
func TestDocsListEverySetting(t *testing.T) {
	t.Parallel()
	for _, doc := range []struct{ path, section string }{
		{"../../docs/CONFIG.md", "## Every setting"},
	} {
		t.Run(filepath.Base(doc.path), func(t *testing.T) {
			raw, err := os.ReadFile(doc.path)
			require.NoError(t, err)
			_, section, ok := strings.Cut(string(raw), "\n"+doc.section+"\n")
			require.True(t, ok, "no section %q", doc.section)
			section, _, _ = strings.Cut(section, "\n## ")

			type row struct {
				cells []string // flag, variable, key, default
				sim   bool
			}
			rows := map[string]row{}
			sim := false // rows after a line naming "Simulator settings" are in that group
			for _, line := range strings.Split(section, "\n") {
				if !strings.HasPrefix(line, "| `--") && !strings.HasPrefix(line, "| none | none | `") {
					sim = sim || strings.Contains(line, "Simulator settings")
					continue
				}
				cells := strings.Split(strings.Trim(line, "|"), "|")
				for i := range cells {
					cells[i] = strings.TrimSpace(cells[i])
				}
				require.GreaterOrEqual(t, len(cells), 5, line)
				name := cells[0]
				if name == "none" { // a setting of the YAML file only, named by its key
					name = cells[2]
				}
				rows[name] = row{cells[:4], sim}
			}

			for _, s := range table(new(Config)) {
				if s.fileOnly {
					key := "`" + s.key + "`"
					r, ok := rows[key]
					if assert.True(t, ok, "no row for %s", key) {
						assert.Equal(t, []string{"none", "none", key, "none"}, r.cells)
					}
					delete(rows, key)
					continue
				}
				flag := "`--" + s.flag() + "`"
				r, ok := rows[flag]
				if !assert.True(t, ok, "no row for %s", flag) {
					continue
				}
				delete(rows, flag)
				key, def := "`"+s.key+"`", "`"+s.def+"`"
				if s.key == fileKey {
					key = "none"
				}
				if s.def == "" {
					def = "none"
				}
				assert.Equal(t, []string{flag, "`" + s.env() + "`", key, def}, r.cells)
				assert.Equal(t, s.sim, r.sim, "%s in the wrong group", flag)
			}
			assert.Empty(t, rows, "rows for settings that do not exist")
		})
	}
}

// TestDefaultModelMayBeAnAlias: default_model names an alias or a Bedrock model id; an
// alias need not look like one.
func TestDefaultModelMayBeAnAlias(t *testing.T) {
	t.Parallel()
	cfg, err := Load([]string{"--model-aliases", "agent=us.anthropic.claude-sonnet-4-20250514-v1:0", "--default-model", "agent"}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, "agent", cfg.DefaultModel)
	_, err = Load([]string{"--default-model", "agent"}, env(nil))
	assert.EqualError(t, err, `default_model: "agent" is neither an alias of model_aliases nor a Bedrock model id; want provider.model (anthropic.claude-sonnet-4-20250514-v1:0), an inference profile (us.anthropic.claude-sonnet-4-20250514-v1:0) or an ARN (from --default-model)`)
}
