package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/smithy-go/logging"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/bedrock"
)

const (
	// credentialsTimeout bounds one lookup of the AWS credentials: the SDK's chain may ask
	// the network (IMDS, STS, the container's endpoint).
	credentialsTimeout = 5 * time.Second
	// credentialsRecheck is how long /readyz relies on the last lookup. Credentials can
	// appear after startup (an instance role attached, an endpoint that answers late) and
	// can stop refreshing; found ones are cached by the SDK, so a lookup then costs no I/O.
	credentialsRecheck = 10 * time.Second
)

// sdkLogger writes what the AWS SDK logs (an IMDS fallback while it looks credentials up)
// as the gateway's log lines, rather than as the SDK's plain text on stderr.
type sdkLogger struct{ log *zap.Logger }

// Logf implements the SDK's logging.Logger.
func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := zapcore.DebugLevel
	if c == logging.Warn {
		level = zapcore.WarnLevel
	}
	if ce := l.log.Check(level, "AWS SDK"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, v...)))
	}
}

// noCredentials is /readyz's reason while the gateway has no AWS credentials. Fixed text:
// /readyz is open without a key, and the cause can name a role or a file, so the cause is
// the log's.
const noCredentials = "the gateway has no AWS credentials; its log says why"

// credentialsCheck tells whether the gateway has AWS credentials (or a Bedrock API key) to
// call Bedrock with: looked up at startup, and again when /readyz asks once the last
// lookup is credentialsRecheck old. It logs what it finds and each change. The lookup
// calls nothing of Bedrock; calls look their credentials up themselves, so they need no
// check to succeed once credentials appear. Safe for concurrent use.
type credentialsCheck struct {
	client *bedrock.Client
	log    *zap.Logger
	now    func() time.Time

	mu      sync.Mutex
	checked time.Time
	found   bool
}

// checkCredentials looks the credentials of client up, logs the outcome, and returns the
// check /readyz asks from then on.
func checkCredentials(client *bedrock.Client, log *zap.Logger, now func() time.Time) *credentialsCheck {
	c := &credentialsCheck{client: client, log: log, now: now}
	c.lookUp(true)
	return c
}

// Missing implements server.Options.Credentials: noCredentials while the last lookup found
// none, else "". A lookup older than credentialsRecheck is made again first; concurrent
// probes wait for one.
func (c *credentialsCheck) Missing() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now().Sub(c.checked) >= credentialsRecheck {
		c.lookUp(false)
	}
	if !c.found {
		return noCredentials
	}
	return ""
}

// lookUp looks the credentials up, within credentialsTimeout, and logs what it found at
// startup, or what changed since the last lookup.
func (c *credentialsCheck) lookUp(startup bool) {
	ctx, cancel := context.WithTimeout(context.Background(), credentialsTimeout)
	defer cancel()
	creds, err := c.client.CheckCredentials(ctx)
	c.checked = c.now()
	was := c.found
	c.found = err == nil
	switch {
	case err != nil && (startup || was):
		c.log.Warn("no AWS credentials: every call to Bedrock fails with 503 and /readyz answers 503 until some are found; "+
			"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or give the gateway an IAM role (IRSA, EKS Pod Identity, ECS task role, EC2 instance profile)",
			zap.Error(err))
	case err == nil && (startup || !was):
		expires := zap.Skip()
		if !creds.Expires.IsZero() {
			expires = zap.Time("expires", creds.Expires)
		}
		c.log.Info("AWS credentials found", zap.String("source", creds.Source), zap.String("provider", creds.Provider), expires)
	}
}
