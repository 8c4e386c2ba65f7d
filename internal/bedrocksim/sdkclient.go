package bedrocksim

import (
	"bytes"
	"io"
	"net/http"
)

// NewSDKHTTPClient returns an HTTP client to give aws-sdk-go-v2 clients (the
// bedrockruntime Options.HTTPClient) that talk to a fast local upstream such as this
// simulator. Tests and benchmarks of any package may use it.
//
// Why it exists (docs/BEDROCK.md B): with the SDK's default client, some ConverseStream calls
// against an upstream that answers within microseconds die with "decode event: read tcp …:
// use of closed network connection" (about 1% where docs/BEDROCK.md measured it; 1 in 8,000 in
// this package's runs). smithy-go hands net/http a request body wrapped in a closer with a
// WriteTo method, and closes it as soon as the response headers arrive. net/http, not
// knowing the body is in memory, sends the headers first, copies the body, then reads it once
// more to be sure it is exhausted; on a fast upstream that last read lands after smithy's
// Close, WriteTo reports io.EOF as an error, and the transport closes the connection under
// the event stream being read. Against real Bedrock the latency hides the race.
//
// The client's transport (see [BufferedBodyTransport]) reads the body into memory first and
// sends a copy that net/http recognizes as in-memory (with ContentLength and GetBody set), so
// smithy's Close can no longer reach what the transport reads.
//
// A second trap, not fixed here: all streams of one bedrockruntime.Client share an
// event-stream codec whose scratch fields they write without a lock (aws/smithy-go#714,
// smithy-go v1.28.8). It is harmless in effect, but `go test -race` reports it, so tests that
// run ConverseStream calls concurrently give each goroutine its own client.
func NewSDKHTTPClient() *http.Client {
	base := http.DefaultTransport
	if t, ok := base.(*http.Transport); ok {
		t = t.Clone()
		// Tests run many concurrent streams against one host; keep their connections.
		t.MaxIdleConnsPerHost = 64
		base = t
	}
	return &http.Client{Transport: &BufferedBodyTransport{Base: base}}
}

// BufferedBodyTransport is an http.RoundTripper that buffers each request body before
// handing a copy to Base; see [NewSDKHTTPClient] for why.
type BufferedBodyTransport struct {
	// Base sends the request; nil means http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements [http.RoundTripper].
func (t *BufferedBodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Body == nil || req.Body == http.NoBody {
		return base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close() // a RoundTripper closes the body, even on error
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.ContentLength = int64(len(body))
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return base.RoundTrip(out)
}
