package e2e

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// TestConfigWarningsAreLogged: the risky settings the configuration found are each one
// warning line at startup, naming no key.
func TestConfigWarningsAreLogged(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.APIKeysFile = "/etc/gateway/keys"
	_, err := gateway.New(t.Context(), cfg, zap.NewNop())
	require.EqualError(t, err, "api_keys_file was not read: build the configuration with config.Load")
}

// TestBadSimFaultStopsStartup: the simulator parses its fault specs once, when the gateway
// builds it, and a bad one is a setting error naming sim_faults and the spec's place in the
// list, found even without --sim (every bad value stops startup).
func TestBadSimFaultStopsStartup(t *testing.T) {
	t.Parallel()
	for _, sim := range []bool{true, false} {
		cfg := defaultConfig(t)
		cfg.Sim.Enabled = sim
		cfg.Sim.Faults = []string{"throttle,times=1", "throttle,bogus=1"}
		cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
		_, err := gateway.New(t.Context(), cfg, zap.NewNop())
		require.EqualError(t, err, "sim_faults[1]: fault \"throttle,bogus=1\": bogus: unknown option; want times, mode, exception, after, model or region")
		var bad *config.SettingError
		require.True(t, errors.As(err, &bad), "a setting error")
		assert.Equal(t, "sim_faults", bad.Key)
	}
}

// TestNewReleasesWhatItBuilt: a gateway whose REST port is taken fails in New, naming the
// listener, after it started the simulator and opened the gRPC listener: both are released
// (the gRPC port can be listened on again, and TestMain finds no goroutine left behind),
// so a caller has nothing to clean up after an error.
func TestNewReleasesWhatItBuilt(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	grpcAddr := free.Addr().String()
	require.NoError(t, free.Close())

	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.GRPCAddr, cfg.HTTPAddr = grpcAddr, taken.Addr().String()
	_, err = gateway.New(t.Context(), cfg, zap.NewNop())
	require.ErrorContains(t, err, "http listen: ")
	again, err := net.Listen("tcp", grpcAddr)
	require.NoError(t, err, "the gRPC listener was closed")
	require.NoError(t, again.Close())
}
