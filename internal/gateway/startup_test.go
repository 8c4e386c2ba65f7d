package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestStartupLine: the "gateway listening" line names every listener that is not on
// loopback, the admin address included, and whether calls need a key; without keys, the
// warning says whether anyone beyond this host reaches the gateway, and what an admin
// address beyond loopback gives away.
func TestStartupLine(t *testing.T) {
	t.Parallel()
	const (
		loop    = "on loopback only"
		aws     = "anyone who can reach this host can use its AWS credentials"
		metrics = "/metrics on the admin address, open without a key, lists key names and model names to anyone who reaches it"
	)
	tests := []struct {
		name       string
		addrs      Addrs
		auth       bool
		open       []any
		listening  string // the warning's; "": no warning
		adminField bool
	}{
		{name: "loopback, no keys", addrs: Addrs{HTTP: "127.0.0.1:8080", GRPC: "[::1]:9090"}, open: []any{}, listening: loop},
		{name: "loopback with a loopback admin, no keys", addrs: Addrs{HTTP: "127.0.0.1:8080", GRPC: "127.0.0.1:9090", Admin: "localhost:9100"},
			open: []any{}, listening: loop, adminField: true},
		{name: "admin on every interface, no keys", addrs: Addrs{HTTP: "127.0.0.1:8080", GRPC: "127.0.0.1:9090", Admin: "0.0.0.0:9100"},
			open: []any{"admin 0.0.0.0:9100"}, listening: "BEYOND LOOPBACK (admin 0.0.0.0:9100): " + metrics, adminField: true},
		{name: "http on every interface, no keys", addrs: Addrs{HTTP: "[::]:8080", GRPC: "127.0.0.1:9090"},
			open: []any{"http [::]:8080"}, listening: "BEYOND LOOPBACK (http [::]:8080): " + aws},
		{name: "everything open, no keys", addrs: Addrs{HTTP: "[::]:8080", GRPC: "10.0.0.7:9090", Admin: "[::]:9100"},
			open: []any{"http [::]:8080", "grpc 10.0.0.7:9090", "admin [::]:9100"}, listening: "BEYOND LOOPBACK (http [::]:8080, grpc 10.0.0.7:9090, admin [::]:9100): " + aws + "; " + metrics, adminField: true},
		{name: "everything open, with keys", addrs: Addrs{HTTP: "[::]:8080", GRPC: "[::]:9090", Admin: "0.0.0.0:9100"}, auth: true,
			open: []any{"http [::]:8080", "grpc [::]:9090", "admin 0.0.0.0:9100"}, adminField: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zap.DebugLevel)
			logStarted(zap.New(core), tt.addrs, "bedrock", tt.auth)

			lines := logs.FilterMessage("gateway listening").AllUntimed()
			require.Len(t, lines, 1)
			f := lines[0].ContextMap()
			assert.Equal(t, tt.addrs.HTTP, f["http"])
			assert.Equal(t, tt.addrs.GRPC, f["grpc"])
			assert.Equal(t, "bedrock", f["upstream"])
			assert.Contains(t, f["try"], "/llm-apps/chat")
			assert.Equal(t, tt.open, f["beyond_loopback"])
			assert.Equal(t, tt.auth, f["keys_required"])
			admin, ok := f["admin"]
			assert.Equal(t, tt.adminField, ok)
			if ok {
				assert.Equal(t, tt.addrs.Admin, admin)
			}

			warnings := logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
			if tt.listening == "" {
				assert.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0].Message, "authentication is off")
			assert.Equal(t, tt.listening, warnings[0].ContextMap()["listening"])
		})
	}
}
