package bedrock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nirmata/llm-gateway/internal/bufpool"
)

// sigv4 signs Converse calls with AWS Signature Version 4, as the SDK's v4.Signer does, for
// the one request shape the client sends: a POST with a body, no query, and the headers
// set by sign. The SDK's signer is general (any header set, presigning, query hoisting)
// and costs about 10 µs and 3 KiB of garbage per call, most of a unary call's signing
// budget; this one builds the canonical request in a reused buffer, derives the signing
// key once per day and credentials, and keeps its HMAC states. Its output is checked
// against the SDK's signer byte for byte (sigv4_test.go).
type sigv4 struct {
	region string
	// scope is the credential scope after the date: "/<region>/bedrock/aws4_request".
	scope string
	key   atomic.Pointer[signingKey]
}

// signingKey is the HMAC key of one day and one set of credentials, with a pool of HMAC
// states keyed with it (an hmac.Hash is not safe for concurrent use, and building one
// costs four allocations).
type signingKey struct {
	accessKey, secret, day string
	macs                   sync.Pool
}

func newSigV4(region string) *sigv4 {
	return &sigv4{region: region, scope: "/" + region + "/" + signingName + "/aws4_request"}
}

// Headers sign sets. They are what AWS requires (host, x-amz-date, the security token of
// temporary credentials) plus what describes the body; the canonical request lists them
// in this order, which is sorted.
const (
	signedHeaders        = "content-length;content-type;host;x-amz-content-sha256;x-amz-date"
	signedHeadersSession = signedHeaders + ";x-amz-security-token"
)

// sign sets X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token (for temporary
// credentials) and Authorization on h, for a POST to host at canonicalURI (the request's
// escaped path, escaped once more, as SigV4 wants for every service but S3) with a JSON
// body (Content-Type jsonType) of contentLength bytes whose SHA-256 is payloadHash (hex).
// contentLength is never 0 (a Converse body is at least {"messages":[]}), so
// content-length is always signed; the SDK leaves it out for an empty body.
func (s *sigv4) sign(h http.Header, host, canonicalURI string, contentLength int64, payloadHash []byte, creds aws.Credentials, now time.Time) {
	bp := bufpool.Get()
	b := now.UTC().AppendFormat((*bp)[:0], "20060102T150405Z")
	var date [16]byte // on the stack: what is appended to, or given to an interface, escapes
	amzDate := date[:copy(date[:], b)]
	day := amzDate[:8]
	session := creds.SessionToken != ""
	token := canonicalValue(creds.SessionToken)

	b = append(b[:0], "POST\n"...)
	b = append(b, canonicalURI...)
	b = append(b, "\n\ncontent-length:"...)
	b = strconv.AppendInt(b, contentLength, 10)
	b = append(b, "\ncontent-type:"+jsonType+"\nhost:"...)
	b = append(b, host...)
	b = append(b, "\nx-amz-content-sha256:"...)
	b = append(b, payloadHash...)
	b = append(b, "\nx-amz-date:"...)
	b = append(b, amzDate...)
	if session {
		b = append(b, "\nx-amz-security-token:"...)
		b = append(b, token...)
		b = append(b, "\n\n"+signedHeadersSession+"\n"...)
	} else {
		b = append(b, "\n\n"+signedHeaders+"\n"...)
	}
	b = append(b, payloadHash...)
	canonical := sha256.Sum256(b)

	// The string to sign, in the same buffer: the canonical request is spent.
	b = append(b[:0], "AWS4-HMAC-SHA256\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, day...)
	b = append(b, s.scope...)
	b = append(b, '\n')
	b = hex.AppendEncode(b, canonical[:])

	key := s.signingKey(creds, day)
	mac := key.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(b)
	n := len(b)
	b = mac.Sum(b)
	var signature [sha256.Size]byte
	copy(signature[:], b[n:])
	key.macs.Put(mac)

	// The Authorization value, in the same buffer again.
	b = append(b[:0], "AWS4-HMAC-SHA256 Credential="...)
	b = append(b, creds.AccessKeyID...)
	b = append(b, '/')
	b = append(b, day...)
	b = append(b, s.scope...)
	if session {
		b = append(b, ", SignedHeaders="+signedHeadersSession+", Signature="...)
	} else {
		b = append(b, ", SignedHeaders="+signedHeaders+", Signature="...)
	}
	b = hex.AppendEncode(b, signature[:])
	// The Authorization value, the date and the payload's hash in one string, and the
	// headers' values in one array: two allocations for the four headers.
	n = len(b)
	b = append(b, amzDate...)
	b = append(b, payloadHash...)
	all := string(b)
	auth, xAmzDate, xAmzContent := all[:n], all[n:n+len(amzDate)], all[n+len(amzDate):]
	bufpool.Put(bp, b)

	values := make([]string, 4)
	values[0], values[1], values[2], values[3] = xAmzDate, xAmzContent, auth, creds.SessionToken
	h["X-Amz-Date"] = values[0:1:1]
	h["X-Amz-Content-Sha256"] = values[1:2:2]
	h["Authorization"] = values[2:3:3]
	if session {
		h["X-Amz-Security-Token"] = values[3:4:4]
	}
}

// canonicalValue is v as SigV4 signs a header value: without surrounding whitespace, runs of
// spaces inside made one. Only a session token can need it (the other values are the
// client's own), and one from a file or variable may end in a newline.
func canonicalValue(v string) string {
	if v == "" || (v[0] < utf8.RuneSelf && !unicode.IsSpace(rune(v[0])) &&
		v[len(v)-1] < utf8.RuneSelf && !unicode.IsSpace(rune(v[len(v)-1])) && !strings.Contains(v, "  ")) {
		return v // the common case, without a copy
	}
	v = strings.TrimSpace(v)
	for strings.Contains(v, "  ") {
		v = strings.ReplaceAll(v, "  ", " ")
	}
	return v
}

// signingKey returns the key for day and creds, deriving it only when either changed.
func (s *sigv4) signingKey(creds aws.Credentials, day []byte) *signingKey {
	if k := s.key.Load(); k != nil && k.accessKey == creds.AccessKeyID && k.secret == creds.SecretAccessKey && k.day == string(day) {
		return k
	}
	k := &signingKey{accessKey: creds.AccessKeyID, secret: creds.SecretAccessKey, day: string(day)}
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), []byte(k.day)) // a copy: day stays on the caller's stack
	key = hmacSHA256(key, []byte(s.region))
	key = hmacSHA256(key, []byte(signingName))
	key = hmacSHA256(key, []byte("aws4_request"))
	k.macs.New = func() any { return hmac.New(sha256.New, key) }
	s.key.Store(k)
	return k
}

func hmacSHA256(key, data []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(data)
	return mac.Sum(nil)
}
