package otlp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestProtocol: export only when an endpoint or OTEL_TRACES_EXPORTER asks for it, over
// the protocol the variables name, traces' own variable first.
func TestProtocol(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "nothing set", env: nil, want: ""},
		{name: "protocol alone", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: ""},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: ProtocolHTTP},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, want: ProtocolHTTP},
		{name: "exporter otlp without endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: ProtocolHTTP},
		{name: "exporter none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: ""},
		{name: "exporter list", env: map[string]string{"OTEL_TRACES_EXPORTER": " OTLP , none"}, want: ProtocolHTTP},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, want: ""},
		{name: "sdk not disabled", env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, want: ProtocolHTTP},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: ProtocolGRPC},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, want: ProtocolHTTP},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL: protocol "http/json" is not supported; use http/protobuf (the default) or grpc`},
		{name: "bad traces protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol "udp" is not supported`},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp,zipkin"},
			wantErr: `OTEL_TRACES_EXPORTER: exporter "zipkin" is not supported; the gateway exports traces with otlp, or none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Protocol(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// clearEnv unsets every variable that decides whether the gateway exports.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
}

// TestSetupOff: without the variables there is no exporter and no provider: tracing is
// off, and shutting it down does nothing.
func TestSetupOff(t *testing.T) {
	clearEnv(t)
	tr, err := Setup(t.Context(), "v1.2.3", zap.NewNop())
	require.NoError(t, err)
	assert.Nil(t, tr)
	assert.False(t, tr.On())
	assert.NoError(t, tr.Shutdown(t.Context()))
}

// TestSetupRefusesAnUnknownProtocol: the gateway does not start exporting somewhere else
// than asked; the error names the variable.
func TestSetupRefusesAnUnknownProtocol(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	tr, err := Setup(t.Context(), "", zap.NewNop())
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")
	assert.Nil(t, tr)
}
