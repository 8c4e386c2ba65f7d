package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Load(nil, env(nil))
	require.NoError(t, err)
	assert.Equal(t, ":8080", cfg.HTTPAddr)
	assert.Equal(t, ":9090", cfg.GRPCAddr)
	assert.Equal(t, DefaultModel, cfg.DefaultModel)
	assert.Empty(t, cfg.APIKeys)
	assert.False(t, cfg.Sim)
	assert.EqualValues(t, 10<<20, cfg.MaxBodyBytes)
	assert.Equal(t, 128, cfg.MaxTools)
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
http_addr: ":1111"
grpc_addr: ":2222"
default_model: file-model
api_keys: [file-key]
model_aliases:
  sonnet: us.anthropic.claude-sonnet-4-20250514-v1:0
max_tools: 64
sim_delta_delay: 5ms
`), 0o600))

	// The file alone.
	cfg, err := Load([]string{"--config", file}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, ":1111", cfg.HTTPAddr)
	assert.Equal(t, []string{"file-key"}, cfg.APIKeys)
	assert.Equal(t, 64, cfg.MaxTools)
	assert.Equal(t, Duration(5*time.Millisecond), cfg.SimDeltaDelay)
	assert.Equal(t, "us.anthropic.claude-sonnet-4-20250514-v1:0", cfg.ModelAliases["sonnet"])

	// The environment beats the file (named through GATEWAY_CONFIG this time).
	cfg, err = Load(nil, env(map[string]string{
		"GATEWAY_CONFIG":    file,
		"GATEWAY_HTTP_ADDR": ":3333",
		"GATEWAY_API_KEYS":  "a, b ,,c",
		"GATEWAY_SIM":       "1",
	}))
	require.NoError(t, err)
	assert.Equal(t, ":3333", cfg.HTTPAddr)
	assert.Equal(t, ":2222", cfg.GRPCAddr)
	assert.Equal(t, []string{"a", "b", "c"}, cfg.APIKeys)
	assert.True(t, cfg.Sim)

	// Flags beat both, including a flag set to empty.
	cfg, err = Load([]string{"--config", file, "--http-addr", ":4444", "--api-keys", "", "--sim=false", "--default-model", "flag-model"},
		env(map[string]string{"GATEWAY_HTTP_ADDR": ":3333", "GATEWAY_API_KEYS": "a", "GATEWAY_SIM": "true"}))
	require.NoError(t, err)
	assert.Equal(t, ":4444", cfg.HTTPAddr)
	assert.Empty(t, cfg.APIKeys)
	assert.False(t, cfg.Sim)
	assert.Equal(t, "flag-model", cfg.DefaultModel)
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("http_adr: ':1'\n"), 0o600))
	tests := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"unknown flag":        {args: []string{"--nope"}, want: "flag provided but not defined"},
		"stray argument":      {args: []string{"serve"}, want: `unexpected argument "serve"`},
		"bad GATEWAY_SIM":     {env: map[string]string{"GATEWAY_SIM": "yes please"}, want: "GATEWAY_SIM"},
		"missing file":        {args: []string{"--config", "/nonexistent.yaml"}, want: "config file"},
		"misspelled file key": {args: []string{"--config", bad}, want: "http_adr"},
		"bad log level":       {args: []string{"--log-level", "loud"}, want: "log level"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tt.args, env(tt.env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
