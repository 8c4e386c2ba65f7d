package bedrock

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestCheckCredentialsFromProfile: credentials of the shared credentials file are found
// without calling Bedrock, and named by their source and file, not by their keys.
func TestCheckCredentialsFromProfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(file, []byte("[gw]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n"), 0o600))
	empty := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	cfg, err := awsconfig.LoadDefaultConfig(t.Context(), awsconfig.WithRegion("us-west-2"), awsconfig.WithSharedConfigProfile("gw"),
		awsconfig.WithSharedCredentialsFiles([]string{file}), awsconfig.WithSharedConfigFiles([]string{empty}))
	require.NoError(t, err)
	var calls atomic.Int32
	c := newTestClient(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }), 1)
	c.creds = cfg.Credentials

	got, err := c.CheckCredentials(t.Context())
	require.NoError(t, err)
	assert.Equal(t, Credentials{Source: "profile", Provider: "SharedConfigCredentials: " + file}, got)
	assert.Zero(t, calls.Load(), "Bedrock is not called")
}

// TestCheckCredentialsFromContainer: credentials a container endpoint serves (ECS, EKS Pod
// Identity) are "container", with their expiry; an endpoint that serves none is
// ErrCredentials, answered as the gateway having no credentials.
func TestCheckCredentialsFromContainer(t *testing.T) {
	t.Parallel()
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	var serving atomic.Bool
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !serving.Load() {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":"NotFound","message":"no role"}`)
			return
		}
		_, _ = io.WriteString(w, `{"AccessKeyId":"ASIACONTAINER","SecretAccessKey":"container-secret","Token":"tok","Expiration":"`+expires.Format(time.RFC3339)+`"}`)
	}))
	t.Cleanup(endpoint.Close)
	c := newTestClient(t, http.NotFoundHandler(), 1)
	c.creds = aws.NewCredentialsCache(endpointcreds.New(endpoint.URL))

	_, err := c.CheckCredentials(t.Context())
	require.ErrorIs(t, err, ErrCredentials)
	f := fault.Classify(t.Context(), err)
	assert.Equal(t, fault.KindNoCredentials, f.Kind)
	assert.NotContains(t, f.Message, "no role", "the cause is the log's")

	serving.Store(true)
	got, err := c.CheckCredentials(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "container", got.Source)
	assert.True(t, expires.Equal(got.Expires), "expires %v, want %v", got.Expires, expires)
}

// TestCheckCredentialsStatic: credentials given in code are "static".
func TestCheckCredentialsStatic(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, http.NotFoundHandler(), 1)
	got, err := c.CheckCredentials(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "static", got.Source)
	assert.Zero(t, got.Expires)
}

// TestSourceName: the trail of the SDK's chain is named step by step, each once.
func TestSourceName(t *testing.T) {
	t.Parallel()
	for want, trail := range map[string][]aws.CredentialSource{
		"env":                 {aws.CredentialSourceEnvVars},
		"web_identity":        {aws.CredentialSourceEnvVarsSTSWebIDToken, aws.CredentialSourceSTSAssumeRoleWebID},
		"profile+assume_role": {aws.CredentialSourceProfileSourceProfile, aws.CredentialSourceProfile, aws.CredentialSourceSTSAssumeRole},
		"sso":                 {aws.CredentialSourceSSO, aws.CredentialSourceProfileSSO},
		"imds":                {aws.CredentialSourceIMDS},
		"container":           {aws.CredentialSourceHTTP},
		"":                    {aws.CredentialSourceUndefined},
	} {
		assert.Equal(t, want, sourceName(trail), "%v", trail)
	}
}
