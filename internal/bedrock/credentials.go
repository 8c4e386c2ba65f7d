package bedrock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Credentials says where the credentials a call would sign with come from; never the keys.
type Credentials struct {
	// Source is where the SDK's chain found them: "env", "profile" (the shared config and
	// credentials files), "web_identity" (IRSA), "sso", "process", "container" (ECS, EKS Pod
	// Identity), "imds" (an EC2 instance role), "assume_role", "login", "sts", "static"
	// (given in code), or "bedrock_api_key" (AWS_BEARER_TOKEN_BEDROCK); "+" joins the steps
	// of a chain that leads from one to another ("profile+assume_role").
	Source string
	// Provider is the SDK provider's own name for them ("SharedConfigCredentials:
	// /home/u/.aws/credentials"); it may be empty.
	Provider string
	// Expires is when they expire; zero when they do not.
	Expires time.Time
}

// CheckCredentials gets the credentials (or Bedrock API key) a call would sign with now,
// as a call does, without calling Bedrock, and says where they come from. An error is an
// ErrCredentials, as a call's would be: the gateway has none it can use. ctx bounds the
// lookup, which may reach the network (IMDS, STS, the container's endpoint).
func (c *Client) CheckCredentials(ctx context.Context) (Credentials, error) {
	if c.bearer != nil {
		tok, err := c.bearer.RetrieveBearerToken(ctx)
		if err != nil {
			return Credentials{}, fmt.Errorf("%w: bearer token: %w", ErrCredentials, err)
		}
		out := Credentials{Source: "bedrock_api_key", Provider: "AWS_BEARER_TOKEN_BEDROCK"}
		if tok.CanExpire {
			out.Expires = tok.Expires
		}
		return out, nil
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: AWS credentials: %w", ErrCredentials, err)
	}
	out := Credentials{Source: "static", Provider: creds.Source}
	if p, ok := c.creds.(aws.CredentialProviderSource); ok {
		if s := sourceName(p.ProviderSources()); s != "" {
			out.Source = s
		}
	}
	if creds.CanExpire {
		out.Expires = creds.Expires
	}
	return out, nil
}

// sourceNames are the SDK's credential sources in the words of Credentials.Source.
var sourceNames = map[aws.CredentialSource]string{
	aws.CredentialSourceCode:                 "static",
	aws.CredentialSourceEnvVars:              "env",
	aws.CredentialSourceEnvVarsSTSWebIDToken: "web_identity",
	aws.CredentialSourceSTSAssumeRoleWebID:   "web_identity",
	aws.CredentialSourceProfileSTSWebIDToken: "web_identity",
	aws.CredentialSourceSTSAssumeRole:        "assume_role",
	aws.CredentialSourceSTSAssumeRoleSaml:    "sts",
	aws.CredentialSourceSTSFederationToken:   "sts",
	aws.CredentialSourceSTSSessionToken:      "sts",
	aws.CredentialSourceProfile:              "profile",
	aws.CredentialSourceProfileSourceProfile: "profile",
	aws.CredentialSourceProfileNamedProvider: "profile",
	aws.CredentialSourceProfileSSO:           "sso",
	aws.CredentialSourceSSO:                  "sso",
	aws.CredentialSourceProfileSSOLegacy:     "sso",
	aws.CredentialSourceSSOLegacy:            "sso",
	aws.CredentialSourceProfileProcess:       "process",
	aws.CredentialSourceProcess:              "process",
	aws.CredentialSourceHTTP:                 "container",
	aws.CredentialSourceIMDS:                 "imds",
	aws.CredentialSourceProfileLogin:         "login",
	aws.CredentialSourceLogin:                "login",
}

// sourceName names the trail of sources the SDK's chain followed, each step once, in
// order: "" when it names none the gateway knows.
func sourceName(trail []aws.CredentialSource) string {
	var names []string
	for _, s := range trail {
		if n, ok := sourceNames[s]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, "+")
}
