package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// simGateway serves a gateway on the embedded simulator, on loopback ports, with an alias
// of a model without tool use; it returns its REST base URL.
func simGateway(t *testing.T) string {
	t.Helper()
	cfg, err := config.Load([]string{"--sim", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--model-aliases", "tiny=meta.llama3-2-1b-instruct-v1:0"}, func(string) string { return "" })
	require.NoError(t, err)
	g, err := gateway.New(t.Context(), cfg, zap.NewNop())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + g.Addrs().HTTP
}

// TestProbe: gateway probe against a real gateway on the simulator exits 0 when the model
// takes tools, 1 when it does not or is unknown (saying why on stderr), and 2 when there is
// no gateway to ask: nothing listening, something else answering, a proxy refusing the key.
func TestProbe(t *testing.T) {
	base := simGateway(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nothing := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())
	notAGateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>It works!</html>"))
	}))
	t.Cleanup(notAGateway.Close)
	// An authenticating proxy in front of the gateway, as an ingress may be.
	target, err := url.Parse(base)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(target)
	guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer probe-key-0123456789" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"missing or invalid API key","code":"unauthenticated","request_id":"r1"}`))
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(guarded.Close)

	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // a pattern of a line, a substring; "" means empty
	}{
		{"default model", []string{base}, 0, `tools +yes`, ""},
		{"a model with tools, flags first", []string{"--model", "us.amazon.nova-pro-v1:0", base}, 0, `prompt caching +yes`, ""},
		{"an alias without tools", []string{base, "--model", "tiny"}, 1, `tools +no`, `gateway probe: model "tiny" does not support tools`},
		{"a model the table does not know", []string{base, "--model", "acme.model-v1"}, 1, `known +no: not in the gateway's model table`,
			`gateway probe: model "acme.model-v1" is not in the gateway's model table, so it does not promise tools`},
		{"not a model", []string{base, "--model", "gpt-4o"}, 1, "", `gateway probe: model "gpt-4o" is neither an alias of this gateway nor a Bedrock model id`},
		{"through a proxy, with the key", []string{guarded.URL, "--key", "probe-key-0123456789"}, 0, `tools +yes`, ""},
		{"through a proxy, without the key", []string{guarded.URL}, 2, "",
			"gateway probe: the gateway refused the probe (401, authentication): missing or invalid API key; give a key with --key"},
		{"through a proxy, with a wrong key", []string{guarded.URL, "--key", "wrong-key-0123456789"}, 2, "", "is --key right?"},
		{"nothing listening", []string{nothing}, 2, "", "gateway probe: cannot reach the gateway: "},
		{"not a gateway", []string{notAGateway.URL}, 2, "", `did not answer as an llm-gateway: its answer is not the capabilities JSON ("<html>It works!</html>")`},
		{"no URL", []string{"--json"}, 2, "", "want the gateway's URL"},
		{"not a URL", []string{"127.0.0.1:8080"}, 2, "", `"127.0.0.1:8080" is not the gateway's URL, e.g. http://127.0.0.1:8080`},
		{"help", []string{"--help"}, 0, `export NIRMATA_TOOLS_ENABLED=\$\(gateway probe`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tt.code, run(t.Context(), append([]string{"probe"}, tt.args...), &stdout, &stderr), stderr.String())
			if tt.stdout == "" {
				assert.Empty(t, stdout.String())
			} else {
				assert.Regexp(t, "(?m)^ *"+tt.stdout, stdout.String())
			}
			if tt.stderr == "" {
				assert.Empty(t, stderr.String())
			} else {
				assert.Contains(t, stderr.String(), tt.stderr)
			}
		})
	}

	// --json prints the gateway's capabilities as they came.
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"probe", "--json", base, "--model", "acme.model-v1"}, &stdout, &stderr))
	var caps struct {
		Known *bool `json:"known"`
		Tools *bool `json:"tools_supported"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &caps), stdout.String())
	require.NotNil(t, caps.Known)
	assert.False(t, *caps.Known)
	assert.False(t, *caps.Tools)
}

// TestProbeOneLiner: the line the help gives a CLI's environment works in a shell, with
// the real process's exit codes.
func TestProbeOneLiner(t *testing.T) {
	base := simGateway(t)
	for model, want := range map[string]string{"": "true", "tiny": "false", "gpt-4o": "false"} {
		args := "probe " + base
		if model != "" {
			args += " --model " + model
		}
		cmd := exec.Command("sh", "-c", `export NIRMATA_TOOLS_ENABLED=$("$0" -test.run='^$' >/dev/null 2>&1 && echo true || echo false); echo "$NIRMATA_TOOLS_ENABLED"`, os.Args[0])
		cmd.Env = append(os.Environ(), "GATEWAY_TEST_RUN_MAIN=1", "GATEWAY_TEST_ARGS="+args)
		out, err := cmd.Output()
		require.NoError(t, err)
		assert.Equal(t, want, strings.TrimSpace(string(out)), args)
	}
}
