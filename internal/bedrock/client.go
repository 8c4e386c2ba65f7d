package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/auth/bearer"
	"github.com/aws/smithy-go/encoding/httpbinding"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/bufpool"
)

// signingName is the SigV4 service name of Bedrock Runtime.
const signingName = "bedrock"

// jsonType is the Content-Type of every call's body.
const jsonType = "application/json"

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// maxAnswerPrealloc bounds the buffer reserved from an answer's Content-Length.
const maxAnswerPrealloc = 4 << 20

// Client calls Converse and ConverseStream. It is safe for concurrent use; build one at
// startup and share it.
type Client struct {
	http     http.RoundTripper
	endpoint *url.URL // scheme://host[/base path], parsed once
	host     string   // the Host header, signed: the endpoint's host without a default port
	region   string
	creds    aws.CredentialsProvider
	signer   *sigv4
	bearer   bearer.TokenProvider // set when AWS_BEARER_TOKEN_BEDROCK is configured
	retryer  aws.Retryer
	onRetry  func(modelID string, err error)

	lastModel atomic.Pointer[modelPath] // see modelPaths
	// skew is how far AWS's clock is ahead of this host's, in nanoseconds, as the last
	// answer's Date header told; calls are signed at the local time plus skew (see
	// observeSkew).
	skew atomic.Int64
}

// ClientOptions adjusts a Client.
type ClientOptions struct {
	// Transport sends the calls; nil means NewTransport(). Calls go to it directly, not
	// through an http.Client: Bedrock does not redirect or set cookies, calls are bounded by
	// their context, and the client's redirect bookkeeping copies every request's headers.
	Transport http.RoundTripper
	// SigV4Only ignores AWS_BEARER_TOKEN_BEDROCK, so a real Bedrock API key in the
	// environment never reaches the simulator.
	SigV4Only bool
	// OnRetry, if set, is told of every retry, with the error that caused it.
	OnRetry func(modelID string, err error)
}

// NewClient resolves everything a call needs once: the bedrockruntime client's own option
// resolution gives the base endpoint (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL,
// the shared config file), the retryer (AWS_MAX_ATTEMPTS, AWS_RETRY_MODE) and the Bedrock
// API key (AWS_BEARER_TOKEN_BEDROCK); its endpoint resolver turns region and base endpoint
// into the URL. Its errors are bad AWS settings (no region, an endpoint it cannot use).
// The credentials are not looked up: see CheckCredentials.
func NewClient(ctx context.Context, cfg aws.Config, o ClientOptions) (*Client, error) {
	opts := bedrockruntime.NewFromConfig(cfg).Options()
	if opts.Region == "" && opts.BaseEndpoint == nil {
		return nil, errors.New("no region: set AWS_REGION, or region in the AWS profile")
	}
	ep, err := opts.EndpointResolverV2.ResolveEndpoint(ctx, bedrockruntime.EndpointParameters{
		Region:       aws.String(opts.Region),
		Endpoint:     opts.BaseEndpoint,
		UseFIPS:      aws.Bool(opts.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack: aws.Bool(opts.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
	})
	if err != nil {
		return nil, fmt.Errorf("Bedrock endpoint: %w", err)
	}
	endpoint := ep.URI
	if endpoint.RawQuery != "" || endpoint.Fragment != "" {
		// Not the query itself in the message: it may carry a secret.
		return nil, fmt.Errorf("Bedrock endpoint %s://%s%s: a query or fragment is not allowed", endpoint.Scheme, endpoint.Host, endpoint.Path)
	}
	endpoint.Path = strings.TrimSuffix(endpoint.Path, "/")
	endpoint.RawPath = ""
	c := &Client{
		http:     o.Transport,
		endpoint: &endpoint,
		host:     hostHeader(&endpoint),
		region:   opts.Region,
		creds:    opts.Credentials,
		signer:   newSigV4(opts.Region),
		retryer:  opts.Retryer,
		onRetry:  o.OnRetry,
	}
	if !o.SigV4Only && len(opts.AuthSchemePreference) > 0 && opts.AuthSchemePreference[0] == "httpBearerAuth" {
		c.bearer = opts.BearerAuthTokenProvider
	}
	if c.bearer == nil && c.creds == nil {
		return nil, errors.New("no AWS credentials provider")
	}
	if c.http == nil {
		c.http = NewTransport()
	}
	return c, nil
}

// hostHeader is u's host as the SDK's signer sends and signs it: without the scheme's
// default port.
func hostHeader(u *url.URL) string {
	switch p := u.Port(); {
	case p == "443" && strings.EqualFold(u.Scheme, "https"), p == "80" && strings.EqualFold(u.Scheme, "http"):
		return strings.TrimSuffix(u.Host, ":"+p)
	}
	return u.Host
}

// NewTransport returns an HTTP transport for one upstream host carrying many concurrent
// streams: a deep idle pool, no response timeout (a model may think for minutes; callers
// bound calls with their context), no transparent gzip (event streams are not compressed),
// and on each HTTP/1.1 connection, for as long as it is open, a read buffer of 1 KiB and a
// write buffer of 2 KiB, not 4 each. The read buffer holds an answer's status line and
// headers (half a kilobyte from Bedrock) and chunk sizes, while an answer's bytes go past
// it, straight into the reads that ask for more (a unary answer's sized buffer, an event
// stream's pooled one: bodyReader). The write buffer holds a call's request line and
// signed headers (about 600 bytes) and the start of its body: a request that fits goes in
// one write, and the rest of a larger body goes past it in a second write, as it would
// past 4 KiB (only bodies of about 1.4 to 3.4 KB take a write more). So a thousand open
// streams hold 3 MiB of them, not 8.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   4096,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ReadBufferSize:        1 << 10,
		WriteBufferSize:       2 << 10,
	}
}

// Endpoint is the resolved base URL, for the startup log.
func (c *Client) Endpoint() string { return c.endpoint.String() }

// Converse calls Converse and decodes the answer.
func (c *Client) Converse(ctx context.Context, modelID string, req *ConverseRequest) (*ConverseResponse, error) {
	out := &ConverseResponse{}
	if err := c.unary(ctx, modelID, opConverse, req, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CountTokens calls CountTokens on the parts of req Bedrock counts (its messages, system
// prompt, tools and additional model fields: countTokensRequest) and returns the input
// tokens it would take. Bedrock counts for a foundation-model id only: it refuses an
// inference profile's here, which Converse needs for the newer models.
func (c *Client) CountTokens(ctx context.Context, modelID string, req *ConverseRequest) (int, error) {
	var out countTokensResponse
	in := countTokensRequest{Input: countTokensInput{Converse: converseTokens{Messages: req.Messages, System: req.System,
		ToolConfig: req.ToolConfig, AdditionalModelRequestFields: req.AdditionalModelRequestFields}}}
	if err := c.unary(ctx, modelID, opCountTokens, &in, &out); err != nil {
		return 0, err
	}
	return int(out.InputTokens), nil
}

// unary sends in to operation op and decodes its answer into out.
func (c *Client) unary(ctx context.Context, modelID string, op operation, in, out any) error {
	resp, err := c.call(ctx, modelID, op, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Read whole, sized from Content-Length, then decode: cheaper than a json.Decoder, which
	// scans the value once to find its end and again to decode it. The decoded answer
	// copies what it keeps, so the buffer goes back to the pool.
	bp := bufpool.Get()
	buf := bytes.NewBuffer(*bp)
	buf.Grow(int(min(max(resp.ContentLength, 0), maxAnswerPrealloc)) + bytes.MinRead) // ReadFrom's room for its last read: no growth at the end
	_, err = buf.ReadFrom(resp.Body)
	defer func() { bufpool.Put(bp, buf.Bytes()) }()
	if err != nil {
		if ctx.Err() != nil {
			return err // the call was ended on purpose, not by Bedrock
		}
		return fmt.Errorf("%w: read %s answer: %w", ErrTransport, names[op], err)
	}
	if err := json.Unmarshal(buf.Bytes(), out, Lenient); err != nil {
		return fmt.Errorf("%w: decode %s answer: %w", ErrTransport, names[op], err)
	}
	return nil
}

// ConverseStream calls ConverseStream and returns the event stream once Bedrock has
// answered 200. Retries happen only before that. ctx bounds the call, the stream's reads
// included; the caller must Close the stream, which ends the call (no context of its own:
// an open stream would hold one more).
func (c *Client) ConverseStream(ctx context.Context, modelID string, req *ConverseRequest) (*EventStream, error) {
	resp, err := c.call(ctx, modelID, opConverseStream, req)
	if err != nil {
		return nil, err
	}
	return NewEventStream(resp.Body), nil
}

// operation is one of the operations a call makes.
type operation int

const (
	opConverse operation = iota
	opConverseStream
	opCountTokens
	operations
)

// names are the operations' path segments; accepts the Accept headers of their answers.
var (
	names   = [operations]string{opConverse: "converse", opConverseStream: "converse-stream", opCountTokens: "count-tokens"}
	accepts = [operations][]string{opConverse: {jsonType}, opConverseStream: {"application/vnd.amazon.eventstream"}, opCountTokens: {jsonType}}
	// contentType is every call's Content-Type header value. Header values are shared
	// between calls: the transport only reads them.
	contentType = []string{jsonType}
)

// call marshals in (as MarshalRequest does) and sends it to one operation, retrying as the
// configured retryer allows, and returns a 200 answer or an error (an *APIError for answers
// Bedrock gave).
func (c *Client) call(ctx context.Context, modelID string, op operation, in any) (*http.Response, error) {
	b, err := json.Marshal(in, marshalOptions)
	if err != nil {
		return nil, fmt.Errorf("bedrock: marshal request: %w", err)
	}
	paths := c.modelPaths(modelID)
	body := &requestBody{b: b, url: paths.urls[op], accept: accepts[op]}
	if c.bearer == nil {
		sum := sha256.Sum256(b)
		hex.Encode(body.sig.payloadHash[:], sum[:])
		body.sig.canonicalURI, body.sig.length, body.signed = paths.canonical[op], int64(len(b)), true
	}

	// Tokens go back to the retryer's bucket after each attempt, as the SDK's own retry
	// middleware does; without that a long-running gateway would spend the retry quota on
	// a few throttles and never retry again.
	release := c.retryer.GetInitialToken()
	for attempt := 1; ; attempt++ {
		resp, err := c.send(ctx, body)
		_ = release(err)
		if err == nil {
			body.b = nil // no attempt can need it again; see requestBody
			return resp, nil
		}
		if ctx.Err() != nil || attempt >= c.retryer.MaxAttempts() || !c.retryer.IsErrorRetryable(err) {
			return nil, err
		}
		var terr error
		if release, terr = c.retryer.GetRetryToken(ctx, err); terr != nil {
			return nil, err // the retry quota is spent: fail fast instead of piling on
		}
		delay, derr := c.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if c.onRetry != nil {
			c.onRetry(modelID, err)
		}
	}
}

// modelPath is the paths of a model's operations.
type modelPath struct {
	model string
	// urls are the endpoint with the model's path and the operation's, by operation. The
	// SDK escapes every reserved character of a path label (":" in model ids, "/" in ARNs)
	// and signs the escaped path; so does the client, so signatures match what AWS checks.
	// They are shared by the calls, which only read them.
	urls [operations]*url.URL
	// canonical are the escaped paths as SigV4 signs them: escaped once more (every
	// service but S3).
	canonical [operations]string
}

// modelPaths returns modelID's paths. A gateway mostly calls one model, so the last one is
// kept: escaping costs more than the rest of building a request.
func (c *Client) modelPaths(modelID string) *modelPath {
	if p := c.lastModel.Load(); p != nil && p.model == modelID {
		return p
	}
	p := &modelPath{model: modelID}
	for op, name := range names {
		u := *c.endpoint
		u.Path += "/model/" + modelID + "/" + name
		u.RawPath = c.endpoint.EscapedPath() + "/model/" + httpbinding.EscapePath(modelID, true) + "/" + name
		p.urls[op], p.canonical[op] = &u, httpbinding.EscapePath(u.RawPath, false)
	}
	c.lastModel.Store(p)
	return p
}

// requestBody is a call's encoded request and what its attempts share. The HTTP transport
// keeps each attempt's *http.Request until the answer's body is closed, which for a stream
// is as long as it stays open; so the request reaches the bytes only through GetBody,
// which reads them from here (call clears b once an answer came: no retry can need them
// after that), and through its Body, which forgets them once written (see send).
type requestBody struct {
	b      []byte
	url    *url.URL
	accept []string
	// sig is what SigV4 signs of the call when signed (not for calls that carry a Bedrock
	// API key).
	sig    signing
	signed bool
}

// getBody is the requests' GetBody.
func (body *requestBody) getBody() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(body.b)), nil
}

// attempt is what one attempt's request refers to, in one allocation: the reader of its
// body and the trace that empties it once written.
type attempt struct {
	br    bytes.Reader
	trace httptrace.ClientTrace
}

// signing is what SigV4 signs of a call besides the headers and the time.
type signing struct {
	canonicalURI string
	payloadHash  [2 * sha256.Size]byte // hex
	length       int64
}

func (c *Client) send(ctx context.Context, body *requestBody) (*http.Response, error) {
	// The body stays a *bytes.Reader, which the transport writes together with the headers
	// (for a reader it does not know to be in memory it writes the headers first: one more
	// write per call). WroteRequest runs on the goroutine that read the body, once it has
	// written it. A retry the transport makes on its own (a stale connection) reads from
	// GetBody, and its reader keeps the bytes: rare.
	a := &attempt{}
	a.br.Reset(body.b)
	a.trace.WroteRequest = func(httptrace.WroteRequestInfo) { a.br.Reset(nil) }
	// The request as NewRequestWithContext builds it, with the URL parsed once per model
	// (modelPaths) and room for the headers authorize adds.
	req := (&http.Request{
		Method: http.MethodPost, URL: body.url, Host: c.host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, 6),
		Body:   io.NopCloser(&a.br), GetBody: body.getBody, ContentLength: int64(len(body.b)),
	}).WithContext(httptrace.WithClientTrace(ctx, &a.trace))
	req.Header["Content-Type"] = contentType
	req.Header["Accept"] = body.accept
	skew := time.Duration(c.skew.Load())
	if err := c.authorize(ctx, req.Header, body, skew); err != nil {
		return nil, err
	}
	sentAt := time.Now()
	resp, err := c.http.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrTransport, err)
	}
	observed, hasSkew := c.observeSkew(resp, sentAt)
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	apiErr := readAPIError(resp)
	if hasSkew && clockSkewCodes[apiErr.Code] && absDuration(skew-observed) > skewThreshold {
		return nil, &clockSkewError{apiErr} // signed with a clock too far off: signed again, it may pass
	}
	return nil, apiErr
}

// Clock skew correction, as the AWS SDKs do it (the Clock Skew Correction SEP): AWS refuses
// a signature whose time is more than 5 minutes from its own, so a host whose clock drifts
// would fail every call. Every answer's Date header tells how far AWS's clock is from
// this host's; the next calls are signed at the local time plus that skew, and a call
// refused for its signature while the skew was that far off is retried.
const (
	// skewThreshold is how far the signing time may be from AWS's before a refused
	// signature is blamed on the clock.
	skewThreshold = 4 * time.Minute
	// maxTrustedRoundTrip: an answer slower than this says nothing reliable of the clock.
	maxTrustedRoundTrip = 15 * time.Minute
)

// clockSkewCodes are the errors a skewed clock can cause.
var clockSkewCodes = map[string]bool{
	CodeInvalidSignature:    true,
	"SignatureDoesNotMatch": true,
	"AuthFailure":           true,
	"RequestTimeTooSkewed":  true,
	CodeAccessDenied:        true,
}

// observeSkew records the skew an answer shows and returns it. An answer without a Date
// header, from a cache (Age), or after too long a round trip shows none.
func (c *Client) observeSkew(resp *http.Response, sentAt time.Time) (time.Duration, bool) {
	receivedAt := time.Now()
	date := resp.Header.Get("Date")
	if date == "" || resp.Header.Get("Age") != "" || receivedAt.Sub(sentAt) > maxTrustedRoundTrip {
		return 0, false
	}
	serverTime, err := http.ParseTime(date)
	if err != nil {
		return 0, false
	}
	skew := serverTime.Sub(receivedAt)
	c.skew.Store(int64(skew))
	return skew, true
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// clockSkewError is a refusal the SDK's retryer retries: the call is signed again at the
// corrected time.
type clockSkewError struct{ *APIError }

func (e *clockSkewError) Unwrap() error        { return e.APIError }
func (e *clockSkewError) RetryableError() bool { return true }

// authorize sets the headers that authenticate a call: a Bedrock API key, or a SigV4
// signature.
func (c *Client) authorize(ctx context.Context, h http.Header, body *requestBody, skew time.Duration) error {
	if !body.signed {
		tok, err := c.bearer.RetrieveBearerToken(ctx)
		if err != nil {
			return fmt.Errorf("%w: bearer token: %w", ErrCredentials, err)
		}
		h["Authorization"] = []string{"Bearer " + tok.Value}
		return nil
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("%w: AWS credentials: %w", ErrCredentials, err)
	}
	sig := &body.sig
	c.signer.sign(h, c.host, sig.canonicalURI, sig.length, sig.payloadHash[:], creds, time.Now().Add(skew))
	return nil
}

// readAPIError turns a non-200 answer into an *APIError. The code comes from the
// X-Amzn-ErrorType header or the body's __type; a bare status (a proxy's answer) is
// mapped to the code Bedrock uses for it.
func readAPIError(resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
		Type     string `json:"__type"`
	}
	_ = json.Unmarshal(raw, &body) // a non-JSON body still yields an error with a status
	code := NormalizeCode(resp.Header.Get("X-Amzn-ErrorType"))
	if code == "" {
		code = NormalizeCode(body.Type)
	}
	if code == "" {
		code = codeForStatus(resp.StatusCode)
	}
	msg := body.Message
	if msg == "" {
		msg = body.Message2
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &APIError{
		Code:       code,
		Message:    msg,
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("X-Amzn-Requestid"),
	}
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeValidation
	case http.StatusUnauthorized, http.StatusForbidden:
		return CodeAccessDenied
	case http.StatusNotFound:
		return CodeResourceNotFound
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return CodeModelTimeout
	case http.StatusTooManyRequests:
		return CodeThrottling
	case http.StatusServiceUnavailable:
		return CodeServiceUnavailable
	default:
		return CodeInternalServer
	}
}

// MarshalRequest encodes a Converse request. json/v2 escapes no HTML, so "<", ">" and "&"
// in prompts and tool inputs reach the model as written. Raw values (tool inputs, JSON tool
// results, schemas) are checked and written as the client wrote them, string escapes
// included (PreserveRawStrings): the same request always gives the same bytes, which
// prompt caching keys on, and nothing is rewritten behind the client's back. Text that is
// not valid UTF-8 becomes U+FFFD rather than an error.
func MarshalRequest(req *ConverseRequest) ([]byte, error) {
	return json.Marshal(req, marshalOptions)
}

var marshalOptions = json.JoinOptions(jsontext.PreserveRawStrings(true), jsontext.AllowInvalidUTF8(true))

// EncodedLen is the length of v's JSON as MarshalRequest writes it (v being a part of a
// ConverseRequest), counted as it is written rather than kept; 0 when v does not encode.
func EncodedLen(v any) int {
	var n byteCounter
	if err := json.MarshalWrite(&n, v, marshalOptions); err != nil {
		return 0
	}
	return int(n)
}

// byteCounter is an io.Writer that only counts.
type byteCounter int

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// Lenient reads JSON the way the gateway reads what others wrote: invalid UTF-8 becomes
// U+FFFD (a model's text may end in half a surrogate pair) and a repeated name keeps its
// last value, rather than failing the whole value. Bedrock's answers are read with it, and
// the values the translator checks before they go to Bedrock.
var Lenient = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
