package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/encoding/httpbinding"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkSign signs, with the SDK's v4.Signer, the request the client sends: POST to endpoint
// + rawPath with a JSON body. It returns the headers the signer set.
func sdkSign(t *testing.T, endpoint, rawPath string, body []byte, creds aws.Credentials, region string, now time.Time) http.Header {
	t.Helper()
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	path, err := url.PathUnescape(rawPath)
	require.NoError(t, err)
	u.Path, u.RawPath = path, rawPath
	req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(string(body)))
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("Content-Type", jsonType)
	req.Header.Set("X-Amz-Content-Sha256", hash)
	require.NoError(t, v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, signingName, region, now))
	return req.Header
}

// ourSign signs the same request with sigv4, as Client.call and Client.send do.
func ourSign(t *testing.T, s *sigv4, endpoint, rawPath string, body []byte, creds aws.Credentials, now time.Time) http.Header {
	t.Helper()
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	h := http.Header{"Content-Type": {jsonType}}
	s.sign(h, hostHeader(u), httpbinding.EscapePath(rawPath, false), int64(len(body)), hex.AppendEncode(nil, sum[:]), creds, now)
	return h
}

// TestSigV4MatchesTheSDK: for every endpoint shape, model id, credential kind and time,
// the headers sigv4 sets are the SDK signer's, byte for byte.
func TestSigV4MatchesTheSDK(t *testing.T) {
	t.Parallel()
	endpoints := []string{
		"https://bedrock-runtime.us-east-1.amazonaws.com",
		"https://bedrock-runtime.us-east-1.amazonaws.com:443", // default port: not signed
		"http://127.0.0.1:4566",
		"http://localhost:80",
		"https://vpce-0123.bedrock-runtime.eu-west-3.vpce.amazonaws.com:8443",
		"https://proxy.example.com/base%20path/bedrock", // a base path, escaped
	}
	models := []string{
		"anthropic.claude-3-5-sonnet-20240620-v1:0",
		"us.anthropic.claude-sonnet-4-20250514-v1:0",
		"arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:provisioned-model/a b+c~d*e(f)g!h'i@j=k,l;m$n&o",
		"modèle-ünïcode/中文:1",
	}
	creds := []aws.Credentials{
		{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"},
		{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "tmp/secret+key", SessionToken: "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJGMEQCIF+token=="},
	}
	regions := []string{"us-east-1", "eu-west-3", "ap-southeast-2"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ep := range endpoints {
		for _, model := range models {
			for _, c := range creds {
				region := regions[rng.IntN(len(regions))]
				now := time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(72 * time.Hour))))
				body := fmt.Appendf(nil, `{"messages":[{"role":"user","content":[{"text":"%d"}]}]}`, rng.Int())
				u, err := url.Parse(ep)
				require.NoError(t, err)
				rawPath := strings.TrimSuffix(u.EscapedPath(), "/") + "/model/" + httpbinding.EscapePath(model, true) + "/converse-stream"
				want := sdkSign(t, ep, rawPath, body, c, region, now)
				got := ourSign(t, newSigV4(region), ep, rawPath, body, c, now)
				for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Content-Sha256", "X-Amz-Security-Token"} {
					assert.Equal(t, want.Values(k), got.Values(k), "%s for %s %s %s", k, ep, model, c.AccessKeyID)
				}
			}
		}
	}
}

// TestSigV4KeyFollowsCredentialsAndDay: the signing key is cached, so a rotation of the
// credentials or a new day must derive a new one, and going back must not reuse a stale one.
func TestSigV4KeyFollowsCredentialsAndDay(t *testing.T) {
	t.Parallel()
	s := newSigV4("us-west-2")
	a := aws.Credentials{AccessKeyID: "AKIDA", SecretAccessKey: "secret-a"}
	aRotated := aws.Credentials{AccessKeyID: "AKIDA", SecretAccessKey: "secret-a2"} // same key id, new secret
	b := aws.Credentials{AccessKeyID: "AKIDB", SecretAccessKey: "secret-b", SessionToken: "token-b"}
	day1 := time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC)
	day2 := day1.Add(time.Second)
	const ep, rawPath = "https://bedrock-runtime.us-west-2.amazonaws.com", "/model/m/converse"
	body := []byte(`{}`)
	for i, step := range []struct {
		creds aws.Credentials
		now   time.Time
	}{{a, day1}, {a, day1}, {aRotated, day1}, {b, day1}, {b, day2}, {a, day2}, {a, day1}} {
		want := sdkSign(t, ep, rawPath, body, step.creds, "us-west-2", step.now)
		got := ourSign(t, s, ep, rawPath, body, step.creds, step.now)
		assert.Equal(t, want.Get("Authorization"), got.Get("Authorization"), "step %d", i)
	}
}

// TestSigV4Concurrent: the pooled HMAC states and buffers are not shared between calls.
func TestSigV4Concurrent(t *testing.T) {
	t.Parallel()
	s := newSigV4("us-east-1")
	c := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
	const ep = "https://bedrock-runtime.us-east-1.amazonaws.com"
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	type job struct {
		rawPath string
		body    []byte
		want    string
	}
	jobs := make([]job, 16)
	for i := range jobs {
		jobs[i].rawPath = fmt.Sprintf("/model/model-%d/converse", i)
		jobs[i].body = fmt.Appendf(nil, `{"n":%d}`, i)
		jobs[i].want = sdkSign(t, ep, jobs[i].rawPath, jobs[i].body, c, "us-east-1", now).Get("Authorization")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				j := jobs[(g+i)%len(jobs)]
				if got := ourSign(t, s, ep, j.rawPath, j.body, c, now).Get("Authorization"); got != j.want {
					t.Errorf("goroutine %d: %s: got %s, want %s", g, j.rawPath, got, j.want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// verifySigV4 checks a received request's signature as AWS does: it rebuilds the request
// from the headers its Authorization lists and signs it again (with the SDK's signer) at
// its X-Amz-Date.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, region string) error {
	auth := r.Header.Get("Authorization")
	_, list, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return fmt.Errorf("no SignedHeaders in %q", auth)
	}
	list, _, _ = strings.Cut(list, ",")
	now, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	if hash := hex.EncodeToString(sum[:]); r.Header.Get("X-Amz-Content-Sha256") != hash {
		return fmt.Errorf("X-Amz-Content-Sha256 %q, body hashes to %q", r.Header.Get("X-Amz-Content-Sha256"), hash)
	}
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath}
	req, err := http.NewRequest(r.Method, u.String(), strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	for _, name := range strings.Split(list, ";") {
		switch name {
		case "host", "content-length":
		default:
			req.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, r.Header.Get("X-Amz-Content-Sha256"), signingName, region, now); err != nil {
		return err
	}
	if want := req.Header.Get("Authorization"); auth != want {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, want)
	}
	return nil
}

// TestClientRequestsVerify: what the client puts on the wire (path, Host, Content-Length,
// headers) verifies against the SDK's signer, with static and temporary credentials.
func TestClientRequestsVerify(t *testing.T) {
	t.Parallel()
	for _, creds := range []aws.Credentials{
		{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"},
		{AccessKeyID: "ASIATEST", SecretAccessKey: "tmp-secret", SessionToken: "session/token+=="},
	} {
		var mu sync.Mutex
		var failures []error
		var paths []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			if err := verifySigV4(r, body, creds, "eu-west-3"); err != nil {
				mu.Lock()
				failures = append(failures, fmt.Errorf("%s: %w", r.URL.RawPath, err))
				mu.Unlock()
				w.WriteHeader(http.StatusForbidden)
				return
			}
			_, _ = io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`)
		}))
		cfg := testConfig(srv.URL, 1)
		cfg.Region = "eu-west-3"
		cfg.Credentials = credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
		c, err := NewClient(t.Context(), cfg, ClientOptions{Transport: srv.Client().Transport})
		require.NoError(t, err)
		// Alternating models: the client keeps the last model's paths.
		var want []string
		for _, model := range []string{
			"anthropic.claude-3-5-haiku-20241022-v1:0",
			"arn:aws:bedrock:eu-west-3:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-20250514-v1:0",
			"anthropic.claude-3-5-haiku-20241022-v1:0",
			"anthropic.claude-3-5-haiku-20241022-v1:0",
		} {
			_, err := c.Converse(t.Context(), model, simpleRequest)
			assert.NoError(t, err, model)
			stream, err := c.ConverseStream(t.Context(), model, simpleRequest)
			if assert.NoError(t, err, model) {
				_ = stream.Close()
			}
			want = append(want, "/model/"+model+"/converse", "/model/"+model+"/converse-stream")
		}
		srv.Close()
		assert.Empty(t, failures)
		assert.Equal(t, want, paths)
	}
}

// BenchmarkSign compares the two signers on a Converse call's request.
func BenchmarkSign(b *testing.B) {
	const ep = "https://bedrock-runtime.us-east-1.amazonaws.com"
	rawPath := "/model/" + httpbinding.EscapePath("us.anthropic.claude-sonnet-4-20250514-v1:0", true) + "/converse"
	body := make([]byte, 2600)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	b.Run("sigv4", func(b *testing.B) {
		s := newSigV4("us-east-1")
		canonicalURI := httpbinding.EscapePath(rawPath, false)
		b.ReportAllocs()
		for b.Loop() {
			h := http.Header{"Content-Type": {jsonType}, "Accept": {jsonType}}
			s.sign(h, "bedrock-runtime.us-east-1.amazonaws.com", canonicalURI, int64(len(body)), []byte(hash), creds, time.Now())
		}
	})
	b.Run("sdk", func(b *testing.B) {
		s := v4.NewSigner()
		u, _ := url.Parse(ep)
		u.Path, _ = url.PathUnescape(rawPath)
		u.RawPath = rawPath
		b.ReportAllocs()
		for b.Loop() {
			req := &http.Request{Method: http.MethodPost, URL: u, ContentLength: int64(len(body)),
				Header: http.Header{"Content-Type": {jsonType}, "Accept": {jsonType}, "X-Amz-Content-Sha256": {hash}}}
			if err := s.SignHTTP(context.Background(), creds, req, hash, signingName, "us-east-1", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzSigV4 holds sigv4 to the SDK's signer for any model id, credentials and time.
func FuzzSigV4(f *testing.F) {
	f.Add("us.anthropic.claude-sonnet-4-20250514-v1:0", "AKIDEXAMPLE", "secret", "", int64(1795300000), []byte(`{}`))
	f.Add("arn:aws:bedrock:us-west-2:123456789012:inference-profile/x:0", "ASIA", "s/+=", "tok en/+=", int64(0), []byte("\x00\xff"))
	f.Add("a b%2F%zz\u00e9\xff", "", "", "", int64(-62135596800), []byte("x"))
	f.Add("m", "AKID", "s", " \ttoken  with   spaces\n\u00a0", int64(1795300000), []byte("{}"))
	f.Fuzz(func(t *testing.T, model, akid, secret, token string, unix int64, body []byte) {
		now := time.Unix(unix%(1<<34), 0) // years 1425–2514: within what both format alike
		c := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret, SessionToken: token}
		if len(body) == 0 {
			t.Skip() // a Converse body is never empty (see sign)
		}
		const ep = "https://bedrock-runtime.us-east-1.amazonaws.com"
		rawPath := "/model/" + httpbinding.EscapePath(model, true) + "/converse"
		want := sdkSign(t, ep, rawPath, body, c, "us-east-1", now)
		got := ourSign(t, newSigV4("us-east-1"), ep, rawPath, body, c, now)
		for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
			if !slices.Equal(want.Values(k), got.Values(k)) {
				t.Fatalf("%s: got %q, want %q", k, got.Values(k), want.Values(k))
			}
		}
	})
}
