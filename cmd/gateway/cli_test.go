package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandLine: help, version and usage errors, each printed once, with exit codes a
// script can rely on.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		args           string
		code           int
		stdout, stderr string // substrings; "" means empty
	}{
		{"--help", 0, "gateway sim [flags]", ""},
		{"-h", 0, "-default-model string", ""},
		{"help", 0, "gateway version", ""},
		{"help sim", 0, "kinds: throttle, unavailable", ""},
		{"sim --help", 0, "Fault syntax", ""},
		{"--version", 0, "gateway ", ""},
		{"version", 0, "gateway ", ""},
		{"sim --fault bogus", 2, "", `unknown fault kind "bogus"; want one of throttle, unavailable, internal, model_not_ready, hang, stream_exception, truncate`},
		{"sim --fault throttle,bogus=1", 2, "", "unknown option; want times, mode, exception, after, model or region"},
		{"--no-such-flag", 2, "", "Run 'gateway --help' for usage."},
		{"--sim --sim-faults throttle;bogus", 2, "", "gateway: sim_faults[1]: unknown fault kind \"bogus\"; want one of throttle"},
		{"--max-tools 0", 2, "", "gateway: max_tools: must be at least 1, got 0 (from --max-tools)\nRun 'gateway --help' for usage.\n"},
		{"--help", 0, "Simulator settings", ""},
		{"frobnicate", 2, "", `unknown command "frobnicate"`},
		{"--help", 0, "Start with 'gateway --sim --http-addr 127.0.0.1:8080 --grpc-addr 127.0.0.1:9090'", ""},
		{"--help", 0, "gateway probe <url>", ""},
		{"help probe", 0, "2  the gateway cannot be reached", ""},
		{"help usage", 0, "gateway replay <request_id> --model <alias or model id>", ""},
		{"usage --help", 0, "--group-by takes key, model, day", ""},
		{"usage --group-by team", 2, "", `gateway: group_by: "team" is not key, model or day` + "\nRun 'gateway help usage' for usage.\n"},
		{"usage --audit-dsn /nonexistent/audit.db", 1, "", "gateway: no audit store to read: stat /nonexistent/audit.db: no such file or directory"},
		{"replay 1234", 2, "", "gateway: gateway replay needs a request id and --model"},
		{"sim --help", 0, "  --addr string  (default 127.0.0.1:4566)\n", ""},
		{"sim --help", 0, "(stream_exception; default throttlingException)", ""},
		{"--sim --model-aliases smart=not-a-model", 2, "", `gateway: model_aliases: smart: "not-a-model" is not a Bedrock model id; want provider.model`},
		{"--sim --default-model gpt-4o", 2, "", `gateway: default_model: "gpt-4o" is neither an alias of model_aliases nor a Bedrock model id`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), strings.Fields(tt.args), &stdout, &stderr)
			assert.Equal(t, tt.code, code)
			if tt.stdout == "" {
				assert.Empty(t, stdout.String())
			} else {
				assert.Contains(t, stdout.String(), tt.stdout)
			}
			if tt.stderr == "" {
				assert.Empty(t, stderr.String())
			} else {
				assert.Contains(t, stderr.String(), tt.stderr)
				assert.Equal(t, 1, strings.Count(stderr.String(), "gateway:"), "the error is printed once: %s", stderr.String())
			}
		})
	}
}

// TestBadKeysStopStartup: a key too short, a keys file line with a note after the key, a
// keys file anyone may write: each stops startup with exit code 2, like every bad setting,
// naming where the key is and quoting none of it. The context is already cancelled, so a
// gateway that started anyway would return at once, with 0.
func TestBadKeysStopStartup(t *testing.T) {
	dir := t.TempDir()
	noted := filepath.Join(dir, "noted")
	require.NoError(t, os.WriteFile(noted, []byte("# ci\nfirst-key-0123456789\n\nsecond-key-0123456789\nwithcomment # prod key\n"), 0o600))
	open := filepath.Join(dir, "open")
	require.NoError(t, os.WriteFile(open, []byte("sha256:"+strings.Repeat("ab", 32)+"\n"), 0o600))
	require.NoError(t, os.Chmod(open, 0o666))
	tests := []struct{ name, args, stderr, secret string }{
		{"short key", "--api-keys Zq9xW7vJ", "gateway: api_keys[0]: shorter than 16 characters, so it can be guessed; make a key with: openssl rand -hex 32 (from --api-keys)\n", "Zq9"},
		{"note after a key", "--api-keys-file " + noted, "gateway: api_keys_file line 5: whitespace inside a key; a line holds one key, and # starts a comment only at the start of a line (from --api-keys-file)\n", "withcomment"},
		{"keys file anyone may write", "--api-keys-file " + open, "gateway: api_keys_file: " + open + " is writable by every user of this host, who could add a key; chmod 600 or 640 (from --api-keys-file)\n", "abab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			var stdout, stderr bytes.Buffer
			args := append([]string{"--sim", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, strings.Fields(tt.args)...)
			assert.Equal(t, 2, run(ctx, args, &stdout, &stderr))
			assert.Empty(t, stdout.String())
			assert.Equal(t, tt.stderr+"Run 'gateway --help' for usage.\n", stderr.String())
			assert.NotContains(t, stderr.String(), tt.secret)
		})
	}
}

// TestBadAWSSettingsStopStartup: an AWS or OpenTelemetry setting the gateway cannot serve
// with stops startup with exit code 2, like every bad setting: no region, a profile that
// is not there, an exporter it does not have. The context is already cancelled, so a
// gateway that started anyway would return at once, with 0.
func TestBadAWSSettingsStopStartup(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	tests := []struct {
		name, args string
		env        []string // KEY=value
		stderr     string
	}{
		{"no region", "", nil, "gateway: AWS settings: no region: set AWS_REGION, or region in the AWS profile\n"},
		{"no such profile", "", []string{"AWS_REGION=us-east-1", "AWS_PROFILE=nosuch"}, "gateway: AWS settings: failed to get shared config profile, nosuch\n"},
		{"exporter", "--sim", []string{"OTEL_TRACES_EXPORTER=zipkin"},
			"gateway: OpenTelemetry settings: OTEL_TRACES_EXPORTER: exporter \"zipkin\" is not supported; the gateway exports traces with otlp, or none\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "OTEL_") {
					t.Setenv(k, "") // an empty variable counts as unset
				}
			}
			t.Setenv("AWS_CONFIG_FILE", empty)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			var stdout, stderr bytes.Buffer
			args := append([]string{"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, strings.Fields(tt.args)...)
			assert.Equal(t, 2, run(ctx, args, &stdout, &stderr))
			assert.Empty(t, stdout.String())
			assert.Equal(t, tt.stderr+"Run 'gateway --help' for usage.\n", stderr.String())
		})
	}
}
