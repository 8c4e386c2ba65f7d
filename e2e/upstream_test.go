package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// Upstreams of one test: a Bedrock stand-in in its own HTTP server, reached by the
// gateway the test starts with the AWS configuration upstreamAt gives it (not through
// the process's environment, which every test shares), so that such tests run in
// parallel. TestRESTToolConversationOnSeparateUpstream covers the environment's chain.

// upstreamAt makes the gateway reach the Bedrock stand-in at url with static fake
// credentials, signing for us-east-1, and try each call at most attempts times, waiting
// at most a millisecond between attempts (the gateway's operators set retries through
// the AWS SDK; tests need its decisions, not its waits).
func upstreamAt(url string, attempts int) gateway.Option {
	return gateway.WithAWSConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(url),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.MaxBackoff = time.Millisecond
			})
		},
	})
}

// recordedSim is a simulator whose Converse requests the test can read back.
type recordedSim struct {
	*bedrocksim.Server
	url    string
	mu     sync.Mutex
	bodies [][]byte
	calls  []simCall
	// usages are the usage of each unary answer it gave.
	usages []bedrockUsage
}

// simCall is where one request to the simulator went: the model its path named, whether it
// was a stream, and the region its SigV4 credential scope named.
type simCall struct {
	Model  string
	Stream bool
	Region string
}

// upstream makes the gateway reach s and try each call once: what the client sees is what
// one Bedrock call did.
func (s *recordedSim) upstream() gateway.Option { return upstreamAt(s.url, 1) }

// received returns what the simulator received, in order.
func (s *recordedSim) received() []simCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// answers returns the usage of each unary answer the simulator gave, in order.
func (s *recordedSim) answers() []bedrockUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.usages)
}

// converseRequests returns the bodies the simulator received, decoded.
func (s *recordedSim) converseRequests(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(s.bodies))
	for i, b := range s.bodies {
		require.NoError(t, json.Unmarshal(b, &out[i]))
	}
	return out
}

// recordSim serves a recorded simulator with faults until the test ends.
func recordSim(t testing.TB, faults ...string) *recordedSim {
	t.Helper()
	var fs []bedrocksim.Fault
	for _, f := range faults {
		fs = append(fs, mustFault(t, f))
	}
	sim := &recordedSim{Server: bedrocksim.New(bedrocksim.Options{Faults: fs})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			op, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/model/"))
			model, stream := strings.CutSuffix(op, "/converse-stream")
			model = strings.TrimSuffix(model, "/converse")
			sim.mu.Lock()
			sim.bodies = append(sim.bodies, body)
			sim.calls = append(sim.calls, simCall{Model: model, Stream: stream, Region: bedrocksim.SigningRegion(r.Header.Get("Authorization"))})
			sim.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !strings.HasSuffix(r.URL.Path, "/converse") {
			sim.ServeHTTP(w, r)
			return
		}
		tee := &teeWriter{ResponseWriter: w}
		sim.ServeHTTP(tee, r)
		var answer struct{ Usage bedrockUsage }
		if json.Unmarshal(tee.body.Bytes(), &answer) == nil {
			sim.mu.Lock()
			sim.usages = append(sim.usages, answer.Usage)
			sim.mu.Unlock()
		}
	}))
	t.Cleanup(func() { sim.Close(); srv.Close() })
	sim.url = srv.URL
	return sim
}

func mustFault(t testing.TB, spec string) bedrocksim.Fault {
	f, err := bedrocksim.ParseFault(spec)
	require.NoError(t, err)
	return f
}

// blockOf returns the first content block of a Converse message that holds key.
func blockOf(t *testing.T, message any, key string) map[string]any {
	t.Helper()
	for _, b := range message.(map[string]any)["content"].([]any) {
		if v, ok := b.(map[string]any)[key]; ok {
			return v.(map[string]any)
		}
	}
	t.Fatalf("no %s block in %v", key, message)
	return nil
}

// pointAWSAt makes the AWS SDK's default configuration chain, which the gateway reads
// without upstreamAt, reach url with static fake credentials, whatever the machine's own
// AWS settings are. It sets environment variables, so its test cannot run in parallel.
func pointAWSAt(t *testing.T, url string) {
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", url)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	t.Setenv("AWS_RETRY_MODE", "standard")
}
