// Package config assembles the gateway's settings from flags, environment variables and an
// optional YAML file. Flags beat the environment, which beats the file, which beats the
// defaults. AWS settings are not here: the AWS SDK's own configuration chain reads them.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultModel is used when neither the request nor the configuration names a model.
const DefaultModel = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// Config is the gateway's configuration. The YAML file uses the json tag names.
type Config struct {
	HTTPAddr string   `json:"http_addr"`
	GRPCAddr string   `json:"grpc_addr"`
	APIKeys  []string `json:"api_keys"`
	// APIKeysFile holds more keys, one per line: the key itself, or sha256:<hex> of it so
	// no plaintext key sits on disk. Blank lines and lines starting with # are skipped.
	APIKeysFile  string `json:"api_keys_file"`
	DefaultModel string `json:"default_model"`
	// Sim serves from the embedded Bedrock simulator instead of AWS.
	Sim bool `json:"sim"`
	// ModelAliases maps a name clients send to a Bedrock model id.
	ModelAliases map[string]string `json:"model_aliases"`
	// MaxBodyBytes bounds a REST request body (413 beyond).
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// MaxTools bounds the tools of one request (400 beyond).
	MaxTools int `json:"max_tools"`
	// MaxMessages and MaxMessageBytes bound a request's history (400 beyond).
	MaxMessages     int `json:"max_messages"`
	MaxMessageBytes int `json:"max_message_bytes"`
	// UpstreamTimeout bounds one Bedrock call, a whole stream included (504 beyond).
	UpstreamTimeout Duration `json:"upstream_timeout"`
	// MaxConcurrent bounds the Bedrock calls in flight; more are refused with 503.
	MaxConcurrent int `json:"max_concurrent"`
	// DrainTimeout bounds how long in-flight calls may finish after SIGTERM; /readyz is 503
	// meanwhile, and what remains is cancelled after it.
	DrainTimeout Duration `json:"drain_timeout"`
	// StreamWriteTimeout cuts a stream whose client has not taken a write for this long, so
	// it cannot hold its upstream call and slot.
	StreamWriteTimeout Duration `json:"stream_write_timeout"`
	// BodyReadTimeout bounds the time from a request's headers to the end of its body; a
	// body that has not arrived by then is answered 408 and its connection closed.
	BodyReadTimeout Duration `json:"body_read_timeout"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// SimFirstTokenDelay and SimDeltaDelay slow the simulator down, for demos and load tests.
	SimFirstTokenDelay Duration `json:"sim_first_token_delay"`
	SimDeltaDelay      Duration `json:"sim_delta_delay"`
	// SimFaults injects simulator faults, e.g. "throttle,times=2" (see bedrocksim.ParseFault).
	SimFaults []string `json:"sim_faults"`
}

// Duration is a time.Duration written as "250ms" in YAML.
type Duration time.Duration

// UnmarshalJSON implements [json.Unmarshaler].
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration must be a string like \"250ms\": %s", b)
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

func defaults() Config {
	return Config{
		HTTPAddr:           ":8080",
		GRPCAddr:           ":9090",
		DefaultModel:       DefaultModel,
		MaxBodyBytes:       10 << 20,
		MaxTools:           128,
		MaxMessages:        1000,
		MaxMessageBytes:    4 << 20,
		UpstreamTimeout:    Duration(10 * time.Minute),
		MaxConcurrent:      4096,
		DrainTimeout:       Duration(20 * time.Second), // + 5 s to close: inside Kubernetes' 30 s grace
		StreamWriteTimeout: Duration(30 * time.Second),
		BodyReadTimeout:    Duration(30 * time.Second),
		LogLevel:           "info",
	}
}

// flagValues are the command-line flags, before the environment and the file fill in
// what they leave unset.
type flagValues struct {
	httpAddr, grpcAddr, apiKeys, apiKeysFile, defaultModel, file, logLevel *string
	sim                                                                    *bool
}

func newFlagSet() (*flag.FlagSet, flagValues) {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, flagValues{
		httpAddr:     fs.String("http-addr", "", "REST, streaming, health and metrics address (env GATEWAY_HTTP_ADDR, default :8080)"),
		grpcAddr:     fs.String("grpc-addr", "", "gRPC address (env GATEWAY_GRPC_ADDR, default :9090)"),
		apiKeys:      fs.String("api-keys", "", "comma-separated client keys; empty turns auth off (env GATEWAY_API_KEYS)"),
		apiKeysFile:  fs.String("api-keys-file", "", "file of client keys, one per line, plaintext or sha256:<hex> (env GATEWAY_API_KEYS_FILE)"),
		defaultModel: fs.String("default-model", "", "model used when a request names none (env GATEWAY_DEFAULT_MODEL, default "+DefaultModel+")"),
		sim:          fs.Bool("sim", false, "serve from the embedded Bedrock simulator instead of AWS (env GATEWAY_SIM=1)"),
		file:         fs.String("config", "", "optional YAML configuration file (env GATEWAY_CONFIG)"),
		logLevel:     fs.String("log-level", "", "debug, info, warn or error (env GATEWAY_LOG_LEVEL, default info)"),
	}
}

// PrintFlags writes the flags Load takes, with their help, for a usage text.
func PrintFlags(w io.Writer) {
	fs, _ := newFlagSet()
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// Load builds the configuration from command-line args (without the program name) and the
// environment given by getenv. -h and --help return flag.ErrHelp, printing nothing.
func Load(args []string, getenv func(string) string) (Config, error) {
	fs, f := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	httpAddr, grpcAddr, apiKeys, apiKeysFile, defaultModel := f.httpAddr, f.grpcAddr, f.apiKeys, f.apiKeysFile, f.defaultModel
	sim, file, logLevel := f.sim, f.file, f.logLevel
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := defaults()
	path := pick(set["config"], *file, getenv("GATEWAY_CONFIG"))
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config file: %w", err)
		}
		if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}

	overlay := func(dst *string, flagName, flagValue, env string) {
		if v := pick(set[flagName], flagValue, getenv(env)); v != "" {
			*dst = v
		}
	}
	overlay(&cfg.HTTPAddr, "http-addr", *httpAddr, "GATEWAY_HTTP_ADDR")
	overlay(&cfg.GRPCAddr, "grpc-addr", *grpcAddr, "GATEWAY_GRPC_ADDR")
	overlay(&cfg.DefaultModel, "default-model", *defaultModel, "GATEWAY_DEFAULT_MODEL")
	overlay(&cfg.LogLevel, "log-level", *logLevel, "GATEWAY_LOG_LEVEL")
	overlay(&cfg.APIKeysFile, "api-keys-file", *apiKeysFile, "GATEWAY_API_KEYS_FILE")
	if set["api-keys"] {
		cfg.APIKeys = splitKeys(*apiKeys)
	} else if v := getenv("GATEWAY_API_KEYS"); v != "" {
		cfg.APIKeys = splitKeys(v)
	}
	if set["sim"] {
		cfg.Sim = *sim
	} else if v := getenv("GATEWAY_SIM"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("GATEWAY_SIM=%q: want 1, 0, true or false", v)
		}
		cfg.Sim = b
	}
	return cfg, cfg.validate()
}

// LoadAPIKeys returns the configured keys and those of the keys file. Entries of the file
// are kept as written ("sha256:<hex>" included): the keyring understands both.
func (c Config) LoadAPIKeys() ([]string, error) {
	keys := append([]string{}, c.APIKeys...)
	if c.APIKeysFile == "" {
		return keys, nil
	}
	raw, err := os.ReadFile(c.APIKeysFile)
	if err != nil {
		return nil, fmt.Errorf("api keys file: %w", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	if len(keys) == len(c.APIKeys) {
		return nil, fmt.Errorf("api keys file %s holds no key", c.APIKeysFile)
	}
	return keys, nil
}

// pick returns the flag value when the flag was given, else the environment value.
func pick(flagSet bool, flagValue, envValue string) string {
	if flagSet {
		return flagValue
	}
	return envValue
}

func splitKeys(s string) []string {
	var keys []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func (c Config) validate() error {
	switch {
	case c.HTTPAddr == "":
		return errors.New("http address is empty")
	case c.GRPCAddr == "":
		return errors.New("grpc address is empty")
	case c.DefaultModel == "":
		return errors.New("default model is empty")
	case c.MaxBodyBytes <= 0:
		return errors.New("max_body_bytes must be positive")
	case c.MaxTools <= 0:
		return errors.New("max_tools must be positive")
	case c.MaxMessages <= 0:
		return errors.New("max_messages must be positive")
	case c.MaxMessageBytes <= 0:
		return errors.New("max_message_bytes must be positive")
	case c.UpstreamTimeout <= 0:
		return errors.New("upstream_timeout must be positive")
	case c.MaxConcurrent <= 0:
		return errors.New("max_concurrent must be positive")
	case c.DrainTimeout < 0:
		return errors.New("drain_timeout must not be negative")
	case c.StreamWriteTimeout <= 0:
		return errors.New("stream_write_timeout must be positive")
	case c.BodyReadTimeout <= 0:
		return errors.New("body_read_timeout must be positive")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevel)
	}
	return nil
}
