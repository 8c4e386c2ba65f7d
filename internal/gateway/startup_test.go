package gateway

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/config"
)

// TestConfigWarningsAreLogged: the risky settings the configuration found are each one
// warning line at startup, naming no key.
func TestConfigWarningsAreLogged(t *testing.T) {
	cfg, err := config.Load([]string{"--sim", "--api-keys", "cli-key-0123456789"}, func(string) string { return "" })
	require.NoError(t, err)
	require.Len(t, cfg.Warnings, 1)
	g := start(t, cfg)
	lines := g.logs.FilterMessage(cfg.Warnings[0]).AllUntimed()
	require.Len(t, lines, 1)
	assert.Equal(t, zapcore.WarnLevel, lines[0].Level)
	assert.NotContains(t, lines[0].Message, "cli-key")
}

// TestKeysFileMustBeRead: a configuration naming a keys file that config.Load did not read
// is refused, rather than served without the file's keys, which could mean without
// authentication.
func TestKeysFileMustBeRead(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeysFile = "/etc/gateway/keys"
	err := run(context.Background(), cfg, zap.NewNop(), nil, runOptions{})
	require.EqualError(t, err, "api_keys_file was not read: build the configuration with config.Load")
}
