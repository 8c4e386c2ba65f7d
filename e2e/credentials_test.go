package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// noCredentials is what a client is told when the gateway has no AWS credentials.
const noCredentials = "the gateway has no AWS credentials, so Bedrock was not called; the gateway log has the cause under this request id"

// containerCredentials serves AWS credentials as ECS's and EKS Pod Identity's endpoint
// does, once serving is set; until then it has none to give.
func containerCredentials(t *testing.T, keyID string) (url string, serving *atomic.Bool) {
	serving = &atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !serving.Load() {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":"NotFound","message":"no role for this task"}`)
			return
		}
		expires := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		_, _ = io.WriteString(w, `{"AccessKeyId":"`+keyID+`","SecretAccessKey":"container-secret","Token":"session","Expiration":"`+expires+`"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, serving
}

// withoutAWSCredentials points the AWS configuration chain at a simulator, with no
// credentials anywhere it looks but the container endpoint at containerURL: no variables,
// empty shared files, IMDS off.
func withoutAWSCredentials(t *testing.T, containerURL string) *bedrocksim.Server {
	sim := bedrocksim.New(bedrocksim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); srv.Close() })
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "") // an empty variable counts as unset
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL)
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", containerURL)
	return sim
}

// TestNoAWSCredentials starts the gateway for AWS Bedrock with no credentials: it warns at
// startup, /readyz answers 503 naming the missing credentials, and every surface answers a
// chat with its own 503 saying the gateway has no AWS credentials, Bedrock never called.
// Once the container endpoint gives credentials, /readyz finds them when its last lookup
// is 10 s old (not before: a probe costs no lookup), names their source, and calls succeed.
func TestNoAWSCredentials(t *testing.T) {
	const keyID = "ASIAE2ETESTCONTAINER"
	containerURL, serving := containerCredentials(t, keyID)
	sim := withoutAWSCredentials(t, containerURL)
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	g := start(t, defaultConfig(t), gateway.WithClock(clock.Now))

	warnings := g.logs.FilterMessageSnippet("no AWS credentials").AllUntimed()
	require.Len(t, warnings, 1, "one warning at startup")
	assert.Equal(t, zapcore.WarnLevel, warnings[0].Level)

	readyz := func() (int, string) {
		resp, err := http.Get("http://" + g.HTTP + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := readyz()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"status":"not_ready","reason":"the gateway has no AWS credentials; its log says why","upstream":"bedrock","store":"memory"}`, body)

	// Nirmata REST, unary and streamed: the error body of docs/PROTOCOL.md 5.
	for _, path := range []string{"/llm-apps/chat", "/llm-apps/chat?stream=true"} {
		resp, b := post(t, "http://"+g.HTTP+path, "Bearer "+testKey, hello)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
		assert.JSONEq(t, `{"error":"`+noCredentials+`","code":"unavailable","request_id":"`+resp.Header.Get("X-Request-Id")+`"}`, string(b), path)
	}

	// OpenAI's API: its error shape, with a code of its own.
	resp, b := post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey,
		`{"model":"`+testModel+`","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.JSONEq(t, `{"error":{"message":"`+noCredentials+`","type":"server_error","param":null,"code":"upstream_credentials_missing"}}`, string(b))

	// gRPC: UNAVAILABLE, with the reason in ErrorInfo.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, hello))
	st := status.Convert(err)
	assert.Equal(t, codes.Unavailable, st.Code())
	assert.Equal(t, noCredentials, st.Message())
	require.NotEmpty(t, st.Details())
	info, ok := st.Details()[0].(*errdetails.ErrorInfo)
	require.True(t, ok)
	assert.Equal(t, "UPSTREAM_CREDENTIALS_MISSING", info.Reason)
	assert.Zero(t, sim.Requests(), "Bedrock is never called")

	// Credentials appear. /readyz relies on its last lookup for 10 s, then looks again.
	serving.Store(true)
	code, _ = readyz()
	assert.Equal(t, http.StatusServiceUnavailable, code, "within 10 s of the last lookup")
	clock.Advance(10 * time.Second)
	code, body = readyz()
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready","upstream":"bedrock","store":"memory"}`, body)
	found := g.logs.FilterMessage("AWS credentials found").AllUntimed()
	require.Len(t, found, 1)
	assert.Equal(t, "container", found[0].ContextMap()["source"])
	assert.NotEmpty(t, found[0].ContextMap()["expires"])

	resp, b = post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, hello)
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.EqualValues(t, 1, sim.Requests())
	for _, line := range g.logs.AllUntimed() {
		for k, v := range line.ContextMap() {
			assert.NotContains(t, fmt.Sprint(v), keyID, "log %q field %s", line.Message, k)
		}
	}
}

// TestAWSCredentialsFromEnv: with credentials in the environment, the startup line names
// their source, "env", and the gateway is ready at once.
func TestAWSCredentialsFromEnv(t *testing.T) {
	const keyID = "AKIDE2ETESTENVKEY"
	withoutAWSCredentials(t, "")
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	g := start(t, defaultConfig(t))

	found := g.logs.FilterMessage("AWS credentials found").AllUntimed()
	require.Len(t, found, 1)
	assert.Equal(t, map[string]any{"source": "env", "provider": "EnvConfigCredentials"}, found[0].ContextMap())
	assert.Empty(t, g.logs.FilterMessageSnippet("no AWS credentials").AllUntimed())
	resp, err := http.Get("http://" + g.HTTP + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
