// Package config assembles the gateway's settings. Each setting is one row of one table
// (see table): its YAML key, from which its environment variable (GATEWAY_ + upper case) and
// flag (-- + kebab case) are derived, its default, its help and its check. Flags beat
// environment variables, which beat the YAML file, which beats the default. AWS settings are
// not here: the AWS SDK's own configuration chain reads them.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"sigs.k8s.io/yaml"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/seal"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
)

// DefaultModel is used when neither the request nor the configuration names a model.
const DefaultModel = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// Config is the gateway's configuration. What each field means is its row's help in table.
type Config struct {
	File     string // the YAML file read, "" for none
	HTTPAddr string
	GRPCAddr string
	// AdminAddr also serves /healthz, /readyz and /metrics; "" serves them on HTTPAddr only.
	AdminAddr string
	APIKeys   []string
	// AdminKeys are the admin API's keys (docs/PROTOCOL.md 17), never valid as client keys.
	// Secrets: never log them.
	AdminKeys   []string
	APIKeysFile string
	// FileKeys are the entries of APIKeysFile as written ("sha256:<hex>" included), which
	// Load read and checked: the file is read once, and its mistakes stop startup like any
	// bad setting.
	FileKeys     []string
	DefaultModel string
	// ModelAliases maps each alias to its targets, in the order calls try them
	// (docs/PROTOCOL.md 14.4).
	ModelAliases       map[string][]Target
	LogLevel           string
	LogFormat          string
	MaxTools           int
	MaxMessages        int
	MaxMessageBytes    int
	MaxBodyBytes       int
	UpstreamTimeout    time.Duration
	MaxConcurrent      int
	DrainTimeout       time.Duration
	StreamWriteTimeout time.Duration
	BodyReadTimeout    time.Duration
	// ParallelToolCalls is the default of a request that does not set parallel_tool_calls.
	ParallelToolCalls bool
	// ParallelMemoryTTL is how long a client seen answering only the first of several
	// tool calls starts its conversations with parallel tool calls off (docs/PROTOCOL.md
	// 13.4); 0 remembers nothing.
	ParallelMemoryTTL time.Duration
	// ReasoningCache bounds the reasoning cache (docs/PROTOCOL.md 11.4).
	ReasoningCache ReasoningCache
	// PromptCaching says whether the gateway adds prompt-cache points of its own.
	PromptCaching Caching
	// ToolValidation is the default tool_validation (docs/PROTOCOL.md 13.2).
	ToolValidation Validation
	// MaxRepairAttempts bounds the model calls one answer's repair may add.
	MaxRepairAttempts int
	// SchemaLimits bound the JSON Schemas clients send (docs/PROTOCOL.md 13.2).
	SchemaLimits toolcheck.Limits
	// Keys are the keys the YAML file names, with their limits and defaults
	// (docs/PROTOCOL.md 14.1); accepted besides APIKeys and the keys file.
	Keys []Key
	// CacheReadWeight is what one prompt-cache read token counts against a key's token
	// limits (docs/PROTOCOL.md 14.2).
	CacheReadWeight float64
	// Prices replace the default prices of the models they name, by model id or
	// foundation model id (docs/PROTOCOL.md 17.1).
	Prices map[string]pricing.Price
	// RedisURL is the Redis the replicas share (docs/PROTOCOL.md 14.3); "" keeps state in
	// the process. It may hold a password: log RedisURL's host only.
	RedisURL string
	// RedisTimeout is the time one request may wait for Redis, all its calls together
	// (docs/PROTOCOL.md 14.3).
	RedisTimeout time.Duration
	// RedisPingInterval is how often the gateway asks Redis whether it answers
	// (docs/PROTOCOL.md 14.3); 0 never.
	RedisPingInterval time.Duration
	// DefaultMaxTokens is the maxTokens of a request that sets none (docs/PROTOCOL.md
	// 14.5); 0 sends none.
	DefaultMaxTokens int
	// ReasoningSealKeys seal the reasoning of Responses clients into encrypted_content
	// (docs/PROTOCOL.md 16): the first seals, all open. Secrets: never log them. None: a
	// random key of the process.
	ReasoningSealKeys []string
	// ResponsesTTL is how long a stored response is kept (docs/PROTOCOL.md 16).
	ResponsesTTL time.Duration
	// ResponsesMaxBytes bounds one stored response; a larger one is answered, not stored.
	ResponsesMaxBytes int
	// ResponsesKeyMaxBytes bounds what one key stores in one responses_ttl; 0 stores
	// nothing.
	ResponsesKeyMaxBytes int
	// ResponsesMemoryBytes bounds the responses kept in the process without redis_url.
	ResponsesMemoryBytes int
	// Audit is the audit level of the calls of keys that set none (docs/PROTOCOL.md 17):
	// off, metadata or full.
	Audit string
	// AuditDSN is where the audit records go: a file path or sqlite://<path> (the embedded
	// store), or postgres://… . It may hold a password: never log it.
	AuditDSN string
	// AuditMaxContentBytes bounds a record's request and its answer each, at the full level.
	AuditMaxContentBytes int
	// AuditRetentionDays is how long records are kept; 0 keeps them.
	AuditRetentionDays int
	// AliasDefaults holds the defaults of the aliases the YAML file gives as objects
	// (docs/PROTOCOL.md 14.1); ModelAliases has their targets.
	AliasDefaults map[string]AliasDefaults
	Sim           Sim
	// Warnings are risky settings that do not stop startup (keys visible in ps, a keys file
	// every user may read); the gateway logs each once at startup.
	Warnings []string
}

// DefaultAuditDSN is the embedded audit store's file, in the working directory.
const DefaultAuditDSN = "llm-gateway-audit.db"

// Target is one place an alias's calls may go (docs/PROTOCOL.md 14.4).
type Target struct {
	ModelID string
	// Region is the AWS region whose Bedrock endpoint serves it; "" is the gateway's own.
	Region string
}

// ReasoningCache bounds the cache of Claude's reasoning blocks the gateway keeps for
// clients that drop them. In the YAML file it is an object, {max_entries: 10000, ttl: 1h,
// max_bytes: 67108864}; as a flag or variable, max_entries=10000,ttl=1h,max_bytes=….
type ReasoningCache struct {
	MaxEntries int
	MaxBytes   int
	TTL        time.Duration
}

// setSchemaLimits reads schema_limits (docs/PROTOCOL.md 13.2; toolcheck.Limits says why
// each default): in the YAML file an object, {max_bytes: 262144, max_depth: 32, …}; as a
// flag or variable, name=n items, max_bytes=262144,max_depth=32,…. Members left out keep
// their value.
func setSchemaLimits(l *toolcheck.Limits, text string) error {
	settings := l.Settings()
	for _, item := range split(text, ",") {
		name, v, _ := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(settings, func(s toolcheck.Setting) bool { return s.Name == name })
		if i < 0 {
			names := make([]string, len(settings))
			for j, s := range settings {
				names[j] = s.Name
			}
			return fmt.Errorf("%q is not %s or %s", name, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s: %q is not a whole number", name, strings.TrimSpace(v))
		}
		*settings[i].Value = n
	}
	return nil
}

// schemaLimitsDefault is schema_limits' default as a flag writes it: toolcheck's.
func schemaLimitsDefault() string {
	d := toolcheck.DefaultLimits
	var items []string
	for _, s := range d.Settings() {
		items = append(items, s.Name+"="+strconv.Itoa(*s.Value))
	}
	return strings.Join(items, ",")
}

func schemaLimits(l toolcheck.Limits) error {
	for _, s := range l.Settings() {
		if *s.Value < 1 {
			return fmt.Errorf("%s must be at least 1, got %d", s.Name, *s.Value)
		}
	}
	return nil
}

// Caching is a prompt_caching value (docs/PROTOCOL.md 12.2).
type Caching string

// Prompt caching modes: no points of the gateway's own, or automatic points.
const (
	CachingOff  Caching = "off"
	CachingAuto Caching = "auto"
)

// parseCaching reads a prompt_caching value. YAML reads an unquoted off as false, so
// false is off too.
func parseCaching(text string) (Caching, error) {
	switch text {
	case "off", "false":
		return CachingOff, nil
	case "auto":
		return CachingAuto, nil
	}
	return "", fmt.Errorf("%q is not off or auto", text)
}

// AliasDefaults are what an alias given as an object sets for a request naming it that
// does not set the field itself (docs/PROTOCOL.md 14.1). Zero values leave the gateway's.
type AliasDefaults struct {
	PromptCaching Caching
	Defaults
}

// Defaults are the defaults a key and an alias object both take (docs/PROTOCOL.md 14.1).
// Zero values leave the next one's: the request's own value beats the key's, which beats
// the alias's, which beats the gateway's.
type Defaults struct {
	ParallelToolCalls *bool
	MaxToolRounds     *int
	// ReasoningEffort is none, minimal, low, medium, high, xhigh or max.
	ReasoningEffort string
	ToolValidation  Validation
}

// Validation is a tool_validation value (docs/PROTOCOL.md 13.2).
type Validation string

// Tool validation modes: calls not checked, returned with their violations, or corrected
// by the model.
const (
	ValidationOff    Validation = "off"
	ValidationReport Validation = "report"
	ValidationRepair Validation = "repair"
)

// parseValidation reads a tool_validation value. YAML reads an unquoted off as false, so
// false is off too.
func parseValidation(text string) (Validation, error) {
	switch text {
	case "off", "false":
		return ValidationOff, nil
	case "report", "repair":
		return Validation(text), nil
	}
	return "", fmt.Errorf("%q is not off, report or repair", text)
}

// maxRepairAttempts bounds max_repair_attempts: each attempt is a whole model call.
const maxRepairAttempts = 10

// maxDefaultMaxTokens bounds default_max_tokens: far above any model's output, and low
// enough that a thinking budget added to it stays an int32.
const maxDefaultMaxTokens = 1_000_000

// Sim holds the embedded simulator's settings, kept apart from production ones: none of
// them matters unless Enabled.
type Sim struct {
	Enabled         bool
	FirstTokenDelay time.Duration
	DeltaDelay      time.Duration
	// Faults are the fault specs as written, e.g. "throttle,times=2": the simulator parses
	// them (bedrocksim.ParseFault) when the gateway starts it, and a bad one is a
	// *SettingError of sim_faults.
	Faults []string
}

// fileKey is the setting naming the YAML file, the one setting the file cannot hold.
const fileKey = "config"

// setting is one row of the table.
type setting struct {
	key  string // YAML key; the environment variable and the flag are derived from it
	def  string // the default, written as a flag value; "" for none
	help string
	sep  string // lists and maps: what separates items in a flag or variable
	sim  bool   // a simulator setting, listed in its own group
	v    value
	// fileOnly: only the YAML file sets it, so it has no flag and no variable (keys do not
	// belong on a command line or in every process's environment).
	fileOnly bool
}

// value ties a row to its Config field and to the check its final value must pass.
type value struct {
	ptr   any          // *string, *int, *float64, *bool, *time.Duration, *[]string, *Caching, *Validation, *aliasTable, *[]Key, *map[string]pricing.Price, *ReasoningCache or *toolcheck.Limits
	check func() error // nil when every value that parses is fine
}

func bind[T any](p *T, check func(T) error) value {
	v := value{ptr: p}
	if check != nil {
		v.check = func() error { return check(*p) }
	}
	return v
}

// table declares every setting, in the order --help and docs/CONFIG.md list them.
func table(c *Config) []setting {
	return []setting{
		{key: fileKey, help: "YAML file with any setting below, by its key; an unknown key stops startup", v: bind(&c.File, nil)},
		{key: "http_addr", def: ":8080", help: "REST, streams, /healthz, /readyz and /metrics listen address", v: bind(&c.HTTPAddr, hostPort)},
		{key: "grpc_addr", def: ":9090", help: "gRPC listen address, with server reflection and grpc.health.v1", v: bind(&c.GRPCAddr, hostPort)},
		{key: "admin_addr", help: "a second listen address for /healthz, /readyz and /metrics alone, for networks where only probes and the scraper reach it; none: they are served on http_addr only", v: bind(&c.AdminAddr, optionalHostPort)},
		{key: "api_keys", sep: ",", help: "client keys, each at least 16 characters (openssl rand -hex 32) or sha256:<hex> of one; none from any source turns authentication off (a warning says so); prefer the variable or the file: every user of the host sees a flag in ps", v: bind(&c.APIKeys, apiKeys)},
		{key: "api_keys_file", help: "file of more client keys, one per line: the key, or sha256:<hex> of it; blank lines and lines starting with # skipped; chmod 600 or 640 (readable by every user: a warning; writable by every user: startup stops)", v: bind(&c.APIKeysFile, nil)},
		{key: "keys", fileOnly: true, help: "named client keys with limits and defaults, a YAML list of {name, key, requests_per_minute, tokens_per_minute, tokens_per_day, usd_per_day, usd_per_month, parallel_tool_calls, max_tool_rounds, tool_validation, reasoning_effort, audit}; accepted besides api_keys", v: bind(&c.Keys, nil)},
		{key: "default_model", def: DefaultModel, help: "model of a request that names none", v: bind(&c.DefaultModel, notEmpty)},
		{key: "model_aliases", sep: ",", help: "names clients may send, each mapped to a Bedrock model id (in the YAML file also an object: targets to fail over between, and defaults)", v: bind(&aliasTable{&c.ModelAliases, &c.AliasDefaults}, aliases)},
		{key: "log_level", def: "info", help: "debug, info, warn or error", v: bind(&c.LogLevel, oneOf("debug", "info", "warn", "error"))},
		{key: "log_format", def: "json", help: "json: one JSON object a line, for log collectors; console: tab-separated lines for people, for local runs", v: bind(&c.LogFormat, oneOf("json", "console"))},
		{key: "max_tools", def: "128", help: "more tools in one request: 400", v: bind(&c.MaxTools, atLeast(1))},
		{key: "max_messages", def: "1000", help: "more messages in one request: 400", v: bind(&c.MaxMessages, atLeast(1))},
		{key: "max_message_bytes", def: "4194304", help: "a larger message (text, parts, image URLs, ids, names, arguments): 400", v: bind(&c.MaxMessageBytes, atLeast(1))},
		{key: "max_body_bytes", def: "10485760", help: "a larger REST body: 413; also the gRPC receive limit", v: bind(&c.MaxBodyBytes, atLeast(1))},
		{key: "upstream_timeout", def: "10m", help: "one Bedrock call, a whole stream included; beyond it, 504", v: bind(&c.UpstreamTimeout, atLeast(time.Millisecond))},
		{key: "max_concurrent", def: "4096", help: "Bedrock calls in flight; beyond it, 503 with Retry-After", v: bind(&c.MaxConcurrent, atLeast(1))},
		// 20 s, plus 5 s to close the servers, fits in Kubernetes' default 30 s grace period.
		{key: "drain_timeout", def: "20s", help: "after SIGTERM, how long calls in flight may finish (/readyz 503 meanwhile); then the rest are cancelled", v: bind(&c.DrainTimeout, atLeast(time.Duration(0)))},
		{key: "stream_write_timeout", def: "30s", help: "a stream whose client takes no write for this long is cut, freeing its upstream call", v: bind(&c.StreamWriteTimeout, atLeast(time.Millisecond))},
		{key: "body_read_timeout", def: "30s", help: "from a request's headers to the end of its body; beyond it, 408 and the connection is closed", v: bind(&c.BodyReadTimeout, atLeast(time.Millisecond))},
		{key: "reasoning_cache", def: "max_entries=10000,ttl=1h,max_bytes=67108864", help: "the reasoning blocks kept for clients that drop them: how many answers, for how long, in how many bytes; max_entries=0 keeps none", v: bind(&c.ReasoningCache, reasoningCache)},
		{key: "parallel_tool_calls", def: "true", help: "the default of a request that does not set parallel_tool_calls; false: one tool call per answer", v: bind(&c.ParallelToolCalls, nil)},
		{key: "parallel_memory_ttl", def: "24h", help: "how long a client (a key with its User-Agent) seen answering only the first of several tool calls starts its conversations with parallel tool calls off, unless a request, key or alias sets parallel_tool_calls; 0 remembers nothing", v: bind(&c.ParallelMemoryTTL, atLeast(time.Duration(0)))},
		{key: "prompt_caching", def: "auto", help: "auto: prompt-cache points after the tools, the system prompt and the history, on models with prompt caching; off: only the clients' cache_control hints", v: bind(&c.PromptCaching, nil)},
		{key: "tool_validation", def: "report", help: "the default of a request that does not set tool_validation: off, report (calls come back with their schema violations) or repair (the model corrects invalid calls)", v: bind(&c.ToolValidation, nil)},
		{key: "max_repair_attempts", def: "2", help: "model calls that tool_validation repair may add to one answer, at most 10; 0: invalid calls come back with their violations", v: bind(&c.MaxRepairAttempts, between(0, maxRepairAttempts))},
		{key: "schema_limits", def: schemaLimitsDefault(), help: "each JSON Schema of a request (tools' parameters, response_format): its bytes and its subschemas' JSON pointers, subschemas, members of one object or array, nesting, schemas chained at one place through $ref, regular expressions by size with repetitions expanded (beyond any: 400 naming the field); and compile_budget, what one request may compile, in subschemas (beyond it: calls unchecked)", v: bind(&c.SchemaLimits, schemaLimits)},
		{key: "cache_read_weight", def: "0.1", help: "what one prompt-cache read token counts against a key's tokens_per_minute and tokens_per_day, from 0 to 1", v: bind(&c.CacheReadWeight, fraction)},
		{key: "prices", fileOnly: true, help: "US dollars per million tokens of the models named, a YAML mapping of model ids or foundation model ids to {input, output, cache_read, cache_write}, each replacing the model's default price (AWS's and Anthropic's published on-demand prices, dated in docs/CONFIG.md); a model without a price costs 0", v: bind(&c.Prices, nil)},
		{key: "redis_url", help: "Redis shared by the replicas, redis://[user:password@]host:port[/db] or rediss:// (TLS): limit counters, the reasoning cache, failover affinity and stored Responses API responses; none: each process keeps its own", v: bind(&c.RedisURL, redisURL)},
		{key: "redis_timeout", def: "100ms", help: "the time one request may wait for Redis, all its calls together; beyond it the request goes on without Redis (limits fail open)", v: bind(&c.RedisTimeout, atLeast(time.Millisecond))},
		{key: "redis_ping_interval", def: store.DefaultPingEvery.String(), help: "how often the gateway asks Redis whether it answers: while its last ping went unanswered, requests make no call to Redis, so this is also how long a Redis that is back waits to be used again; 0: never, every call is sent (a silent Redis then costs each request up to redis_timeout)", v: bind(&c.RedisPingInterval, atLeast(time.Duration(0)))},
		{key: "reasoning_seal_keys", sep: ",", help: "keys sealing the reasoning Responses clients get as encrypted_content and send back, each 64 hex digits or base64 of 32 bytes (openssl rand -base64 32); the first seals, every one opens, so a new key goes first and the old one stays until its values are no longer sent; replicas share them; none: a random key of the process, whose values no restart or other replica opens; prefer the variable or the file", v: bind(&c.ReasoningSealKeys, sealKeys)},
		{key: "responses_ttl", def: "168h", help: "how long a stored Responses API response (store: true) is kept for GET and previous_response_id", v: bind(&c.ResponsesTTL, atLeast(time.Second))},
		{key: "responses_max_bytes", def: "1048576", help: "a stored response larger than this, its conversation included, is answered but not stored (x-gateway-not-stored says why); at most 4194304", v: bind(&c.ResponsesMaxBytes, between(1, store.MaxValueBytes))},
		{key: "responses_key_max_bytes", def: "268435456", help: "the bytes of responses one key may store in one responses_ttl; beyond it its responses are answered, not stored; 0 stores none", v: bind(&c.ResponsesKeyMaxBytes, atLeast(0))},
		{key: "responses_memory_bytes", def: "268435456", help: "without redis_url, the bytes of stored responses kept in the process, least recently used dropped first", v: bind(&c.ResponsesMemoryBytes, atLeast(0))},
		{key: "audit", def: "off", help: "the audit trail of the calls of keys that set no audit of their own: off; metadata (who called, from which client, the model asked and served, status, finish reason, tokens, cost, latency, the tool calls' names, ids and outcomes); full (also the request and the answer, each at most audit_max_content_bytes; never the key)", v: bind(&c.Audit, oneOf(audit.LevelOff, audit.LevelMetadata, audit.LevelFull))},
		{key: "audit_dsn", def: DefaultAuditDSN, help: "where the audit records go: a file path or sqlite://<path> for the embedded store of one process (a bbolt file), or postgres://user:password@host:port/db?sslmode=… for a PostgreSQL database the replicas share; the schema is created or migrated at startup", v: bind(&c.AuditDSN, auditDSN)},
		{key: "audit_max_content_bytes", def: "262144", help: "at the full level, the bytes kept of a call's request and of its answer each; a larger one is kept as its first bytes with \"clipped\": true", v: bind(&c.AuditMaxContentBytes, atLeast(1024))},
		{key: "audit_retention_days", def: "30", help: "how many days audit records are kept; 0 keeps them", v: bind(&c.AuditRetentionDays, atLeast(0))},
		{key: "admin_keys", sep: ",", help: "keys of the admin API on admin_addr (/admin/v1/usage, /admin/v1/calls/{request_id}), each at least 16 characters or sha256:<hex> of one; never valid as client keys; none: the admin API refuses every request; prefer the variable", v: bind(&c.AdminKeys, apiKeys)},
		{key: "default_max_tokens", def: "4096", help: "maxTokens of a request that sets no max_tokens, capped at the model's maximum output where the gateway knows it (Bedrock reserves quota for maxTokens); 0 sends none", v: bind(&c.DefaultMaxTokens, between(0, maxDefaultMaxTokens))},

		{key: "sim", sim: true, def: "false", help: "serve from the embedded Bedrock simulator instead of AWS (no AWS account needed)", v: bind(&c.Sim.Enabled, nil)},
		{key: "sim_first_token_delay", sim: true, def: "0s", help: "the simulator's delay before its first event", v: bind(&c.Sim.FirstTokenDelay, atLeast(time.Duration(0)))},
		{key: "sim_delta_delay", sim: true, def: "0s", help: "the simulator's delay between stream deltas", v: bind(&c.Sim.DeltaDelay, atLeast(time.Duration(0)))},
		// ";" because a fault spec holds commas itself.
		{key: "sim_faults", sim: true, sep: ";", help: "upstream faults the simulator injects, e.g. throttle,times=2 (syntax: gateway sim --help)", v: bind(&c.Sim.Faults, nil)},
	}
}

func (s setting) env() string  { return "GATEWAY_" + strings.ToUpper(s.key) }
func (s setting) flag() string { return strings.ReplaceAll(s.key, "_", "-") }

// kind shows the value's form in --help.
func (s setting) kind() string {
	switch s.v.ptr.(type) {
	case *int:
		return "int"
	case *float64:
		return "number"
	case *bool:
		return "bool"
	case *time.Duration:
		return "duration"
	case *[]string:
		return "a" + s.sep + "b"
	case *aliasTable:
		return "name=id" + s.sep + "name=id"
	case *ReasoningCache:
		return "max_entries=n,ttl=d,max_bytes=n"
	case *toolcheck.Limits:
		return "name=n,…"
	case *Caching:
		return "off|auto"
	case *Validation:
		return "off|report|repair"
	}
	return "string"
}

// set parses text, from a flag, an environment variable or the default, into the field.
// add keeps the items a list or map already has: its flag may repeat.
func (s setting) set(text string, add bool) error {
	switch p := s.v.ptr.(type) {
	case *string:
		*p = text
	case *int:
		n, err := strconv.Atoi(text)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", text)
		}
		*p = n
	case *float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", text)
		}
		*p = f
	case *bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("%q is not 1, 0, true or false", text)
		}
		*p = b
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%q is not a duration like \"30s\"", text)
		}
		*p = d
	case *[]string:
		if !add {
			*p = nil
		}
		*p = append(*p, split(text, s.sep)...)
	case *Caching:
		c, err := parseCaching(text)
		if err != nil {
			return err
		}
		*p = c
	case *Validation:
		v, err := parseValidation(text)
		if err != nil {
			return err
		}
		*p = v
	case *aliasTable:
		if !add {
			p.reset()
		}
		for _, item := range split(text, s.sep) {
			name, id, ok := strings.Cut(item, "=")
			if !ok {
				return fmt.Errorf("%q is not name=id", item)
			}
			p.add(strings.TrimSpace(name), Target{ModelID: strings.TrimSpace(id)})
		}
	case *ReasoningCache:
		return p.set(text)
	case *toolcheck.Limits:
		return setSchemaLimits(p, text)
	case *[]Key:
		*p = nil // only the default comes here: the file's keys are decoded
	case *map[string]pricing.Price:
		*p = nil // only the default comes here: the file's prices are decoded
	}
	return nil
}

// set reads max_entries=n,ttl=d,max_bytes=n; members left out keep their value.
func (r *ReasoningCache) set(text string) error {
	for _, item := range split(text, ",") {
		name, v, _ := strings.Cut(item, "=")
		var err error
		switch name = strings.TrimSpace(name); name {
		case "max_entries":
			r.MaxEntries, err = strconv.Atoi(strings.TrimSpace(v))
		case "max_bytes":
			r.MaxBytes, err = strconv.Atoi(strings.TrimSpace(v))
		case "ttl":
			r.TTL, err = time.ParseDuration(strings.TrimSpace(v))
		default:
			return fmt.Errorf("%q is not max_entries, ttl or max_bytes", name)
		}
		if err != nil {
			return fmt.Errorf("%s: %q is not a valid value", name, strings.TrimSpace(v))
		}
	}
	return nil
}

func reasoningCache(r ReasoningCache) error {
	switch {
	case r.MaxEntries < 0:
		return fmt.Errorf("max_entries must be at least 0, got %d", r.MaxEntries)
	case r.MaxBytes < 0:
		return fmt.Errorf("max_bytes must be at least 0, got %d", r.MaxBytes)
	case r.TTL <= 0:
		return fmt.Errorf("ttl must be above 0, got %v", r.TTL)
	}
	return nil
}

// decode sets the field from the file: raw is the key's value, turned into JSON by the
// YAML reader.
func (s setting) decode(raw jsontext.Value) error {
	switch p := s.v.ptr.(type) {
	case *[]string:
		if err := json.Unmarshal(raw, p); err != nil {
			return fmt.Errorf("want a list of strings, got %s", kindOf(raw))
		}
	case *aliasTable:
		return p.decode(raw)
	case *[]Key:
		keys, err := decodeKeys(raw)
		*p = keys
		return err
	case *map[string]pricing.Price:
		prices, err := decodePrices(raw)
		*p = prices
		return err
	case *ReasoningCache:
		return decodeMembers(raw, "{max_entries: 10000, ttl: 1h}", p.set)
	case *toolcheck.Limits:
		return decodeMembers(raw, "{max_bytes: 262144, max_depth: 32}", func(text string) error { return setSchemaLimits(p, text) })
	default:
		if raw[0] == '[' || raw[0] == '{' {
			return fmt.Errorf("want a single value, got %s", raw)
		}
		// A scalar is parsed like the same text in a flag: one parser, one set of messages
		// for every source.
		var text string
		if json.Unmarshal(raw, &text) != nil {
			text = string(raw) // a number, true or false
		}
		return s.set(text, false)
	}
	return nil
}

// kindOf names what kind of value raw is, without quoting it: api_keys is a list, and a key
// written as a scalar would otherwise reach the terminal.
func kindOf(raw jsontext.Value) string {
	switch raw.Kind() {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	case '{':
		return "a mapping"
	}
	return "a list of other values"
}

// decodeMembers sets an object setting from the file's mapping, each member as its flag
// writes it (name=value), so the file and the flags share one parser and its messages.
func decodeMembers(raw jsontext.Value, example string, set func(string) error) error {
	var o map[string]jsontext.Value
	if err := json.Unmarshal(raw, &o); err != nil {
		return fmt.Errorf("want a mapping like %s, got %s", example, raw)
	}
	for _, name := range slices.Sorted(maps.Keys(o)) {
		text := string(o[name])
		var str string
		if json.Unmarshal(o[name], &str) == nil {
			text = str
		}
		if err := set(name + "=" + text); err != nil {
			return err
		}
	}
	return nil
}

// flagArg is a flag as given on the command line. Flags are parsed before the file is read
// (--config is one of them) but applied after it and the environment, which they beat.
type flagArg struct {
	s    setting
	text string
}

type flagValue struct {
	s     setting
	given *[]flagArg
}

func (f flagValue) String() string { return "" }
func (f flagValue) IsBoolFlag() bool {
	_, ok := f.s.v.ptr.(*bool)
	return ok
}
func (f flagValue) Set(text string) error {
	*f.given = append(*f.given, flagArg{f.s, text})
	return nil
}

// SettingError is a bad value of one setting: Load's errors hold one for each, and so does
// the error of the part of the gateway that reads a setting Load cannot check (the
// simulator's fault specs, which bedrocksim parses), so the command answers both alike.
type SettingError struct {
	Key string
	// Err says what is wrong; one starting with "[" is a path into the setting's list
	// ("[2].name: …"), one starting with "line " a line of the setting's file.
	Err error
}

func (e *SettingError) Error() string {
	sep := ": "
	switch msg := e.Err.Error(); {
	case strings.HasPrefix(msg, "["):
		sep = "" // "keys[2].name: …"
	case strings.HasPrefix(msg, "line "):
		sep = " " // "api_keys_file line 4: …"
	}
	return e.Key + sep + e.Err.Error()
}

func (e *SettingError) Unwrap() error { return e.Err }

// Load builds the configuration from command-line args (without the program name) and the
// environment given by getenv; an empty variable counts as unset. Every bad value is
// reported, each naming its key and where it came from, even one a higher source overrides:
// it is still a mistake where it is written. -h and --help return flag.ErrHelp, printing
// nothing.
func Load(args []string, getenv func(string) string) (Config, error) {
	var c Config
	rows := table(&c)
	from := map[string]string{} // where each key's value came from
	bad := map[string]bool{}    // keys whose value did not parse: not checked further
	var errs []error
	fail := func(key string, err error) {
		bad[key] = true
		errs = append(errs, fmt.Errorf("%w (from %s)", &SettingError{Key: key, Err: err}, from[key]))
	}

	for _, s := range rows {
		from[s.key] = "the default"
		if err := s.set(s.def, false); err != nil {
			fail(s.key, err)
		}
	}

	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var given []flagArg
	for _, s := range rows {
		if !s.fileOnly {
			fs.Var(flagValue{s, &given}, s.flag(), s.help)
		}
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	path, pathFrom := getenv("GATEWAY_CONFIG"), "GATEWAY_CONFIG"
	for _, g := range given {
		if g.s.key == fileKey {
			path, pathFrom = g.text, "--"+fileKey
		}
	}
	if path != "" {
		err := readFile(rows, path, from, fail)
		if err == nil {
			// The file's own keys: the environment and flags are applied after.
			held := slices.Clone(c.APIKeys)
			for _, k := range c.Keys {
				held = append(held, k.Key)
			}
			var warning string
			warning, err = exposure(path, plaintext(held))
			c.warn(fileKey, warning)
		}
		if err != nil {
			from[fileKey] = pathFrom
			fail(fileKey, err)
		}
	}

	for _, s := range rows {
		if text := getenv(s.env()); text != "" {
			from[s.key] = s.env()
			if s.fileOnly {
				fail(s.key, errors.New("only the YAML file (--config) sets it"))
			} else if err := s.set(text, false); err != nil {
				fail(s.key, err)
			}
		}
	}

	seen := map[string]bool{}
	for _, g := range given {
		from[g.s.key] = "--" + g.s.flag()
		if err := g.s.set(g.text, seen[g.s.key]); err != nil {
			fail(g.s.key, err)
		}
		seen[g.s.key] = true
	}

	for _, s := range rows {
		if s.v.check != nil && !bad[s.key] {
			if err := s.v.check(); err != nil {
				fail(s.key, err)
			}
		}
	}
	if !bad["default_model"] && !bad["model_aliases"] {
		if err := c.defaultModel(); err != nil {
			fail("default_model", err)
		}
	}
	if from["api_keys"] == "--api-keys" && plaintext(c.APIKeys) {
		c.warn("api_keys", "keys given with --api-keys are visible to every user of this host (ps, /proc); give them in --api-keys-file or GATEWAY_API_KEYS")
	}
	if from["reasoning_seal_keys"] == "--reasoning-seal-keys" {
		c.warn("reasoning_seal_keys", "keys given with --reasoning-seal-keys are visible to every user of this host (ps, /proc); give them in GATEWAY_REASONING_SEAL_KEYS or the configuration file")
	}
	if c.APIKeysFile != "" && !bad["api_keys_file"] {
		warning, fileErrs := c.readKeysFile()
		for _, err := range fileErrs {
			fail("api_keys_file", err)
		}
		c.warn("api_keys_file", warning)
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// readFile sets the keys the YAML file at path holds. It fails only when the file cannot be
// read as a mapping; each bad key goes to fail, so every one is reported.
func readFile(rows []setting, path string, from map[string]string, fail func(string, error)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSONStrict(raw) // strict: a key given twice is an error
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var keys map[string]jsontext.Value
	if json.Unmarshal(js, &keys) != nil {
		return fmt.Errorf("%s: want a mapping of settings (key: value)", path)
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names) // errors in a stable order
	for _, k := range names {
		from[k] = path
		i := slices.IndexFunc(rows, func(s setting) bool { return s.key == k })
		switch {
		case k == fileKey:
			fail(k, errors.New("a file cannot name another; use --config or GATEWAY_CONFIG"))
		case i < 0:
			fail(k, errors.New("unknown key; gateway --help lists them"))
		default:
			if err := rows[i].decode(keys[k]); err != nil {
				fail(k, err)
			}
		}
	}
	return nil
}

// PrintFlags writes every setting for gateway --help: the production settings, then the
// simulator's, each with its flag, environment variable, YAML key and default.
func PrintFlags(w io.Writer) {
	fmt.Fprint(w, `Settings: a flag beats its environment variable, which beats the --config file, which
beats the default. The flag of a list or a map may repeat.

`)
	rows := table(new(Config))
	for _, sim := range []bool{false, true} {
		if sim {
			fmt.Fprint(w, "\nSimulator settings (none matters without --sim):\n\n")
		}
		for _, s := range rows {
			if s.sim != sim {
				continue
			}
			if s.fileOnly {
				fmt.Fprintf(w, "  %s  (yaml only, default none)\n        %s\n", s.key, s.help)
				continue
			}
			kind := " " + s.kind()
			if kind == " bool" {
				kind = "" // a bool flag takes no value
			}
			where := "env " + s.env()
			if s.key != fileKey {
				where += ", yaml " + s.key
			}
			def := s.def
			if def == "" {
				def = "none"
			}
			where += ", default " + def
			fmt.Fprintf(w, "  --%s%s  (%s)\n        %s\n", s.flag(), kind, where, s.help)
		}
	}
}

// warn adds a warning about key's setting; "" adds none.
func (c *Config) warn(key, warning string) {
	if warning != "" {
		c.Warnings = append(c.Warnings, key+": "+warning)
	}
}

// split returns the items of s between seps, trimmed, empty ones dropped.
func split(s, sep string) []string {
	var items []string
	for _, item := range strings.Split(s, sep) {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// The checks of the table.

func atLeast[T int | time.Duration](least T) func(T) error {
	return func(v T) error {
		if v < least {
			return fmt.Errorf("must be at least %v, got %v", least, v)
		}
		return nil
	}
}

func between(least, most int) func(int) error {
	return func(v int) error {
		if v < least || v > most {
			return fmt.Errorf("must be from %d to %d, got %d", least, most, v)
		}
		return nil
	}
}

func notEmpty(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	return nil
}

func oneOf(allowed ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(allowed, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(allowed, ", "))
		}
		return nil
	}
}

func hostPort(s string) error {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("%q is not host:port like \":8080\"", s)
	}
	return nil
}

// optionalHostPort is a listen address, or "" for none.
func optionalHostPort(s string) error {
	if s == "" {
		return nil
	}
	return hostPort(s)
}

// aliases checks model_aliases: every alias named, and each of its targets a Bedrock model
// id, an inference profile or an ARN by its shape (capabilities.IsModelID), so that a
// target no call could reach stops startup rather than every call to the alias.
func aliases(t aliasTable) error {
	m := *t.targets
	for _, name := range slices.Sorted(maps.Keys(m)) { // the first bad one, always the same
		if id := m[name][0].ModelID; name == "" || id == "" {
			return fmt.Errorf("%q=%q: both the name and the model id must be set", name, id)
		}
		for i, target := range m[name] {
			if capabilities.IsModelID(target.ModelID) {
				continue
			}
			at := name
			if _, object := (*t.defaults)[name]; object {
				at = fmt.Sprintf("%s.targets[%d].model_id", name, i)
			}
			return fmt.Errorf("%s: %q is not a Bedrock model id; %s", at, target.ModelID, modelIDShapes)
		}
	}
	return nil
}

// modelIDShapes says what a Bedrock model id looks like (capabilities.IsModelID).
const modelIDShapes = "want provider.model (anthropic.claude-sonnet-4-20250514-v1:0), an inference profile (us.anthropic.claude-sonnet-4-20250514-v1:0) or an ARN"

// defaultModel checks default_model against model_aliases: an alias, or a Bedrock model id
// by its shape.
func (c *Config) defaultModel() error {
	if _, alias := c.ModelAliases[c.DefaultModel]; alias || capabilities.IsModelID(c.DefaultModel) {
		return nil
	}
	return fmt.Errorf("%q is neither an alias of model_aliases nor a Bedrock model id; %s", c.DefaultModel, modelIDShapes)
}

// fraction checks a weight: from 0 to 1.
func fraction(f float64) error {
	if !(f >= 0 && f <= 1) { // NaN too
		return fmt.Errorf("must be from 0 to 1, got %v", f)
	}
	return nil
}

// redisURL checks a redis_url as the store will read it; its errors never quote the URL,
// which may hold a password.
// sealKeys checks each reasoning seal key, without quoting one.
func sealKeys(keys []string) error {
	for i, k := range keys {
		if _, err := seal.ParseKey(k); err != nil {
			return fmt.Errorf("key %d %w", i+1, err)
		}
	}
	return nil
}

// auditDSN checks an audit_dsn: a path, or a URL of a scheme audit.Open takes. The error
// never quotes the value, which may hold a password.
func auditDSN(s string) error {
	if s == "" {
		return errors.New("empty; give a file path or a postgres:// URL")
	}
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || slices.Contains(audit.Schemes, scheme) {
		return nil
	}
	return fmt.Errorf("want a file path or a URL of scheme %s; got a URL of another scheme", strings.Join(audit.Schemes, ", "))
}

func redisURL(s string) error {
	if s == "" {
		return nil
	}
	_, err := store.ParseURL(s)
	return err
}
