// Command baseline is the yardstick for the gateway's own cost: a proxy that forwards the
// client's bytes unchanged to the same upstream the gateway uses. The load generator sends it
// Bedrock Converse requests equivalent to the gateway's chat requests, so upstream work is
// equal and the difference between the two is what translating, signing and re-encoding
// cost.
//
// By default it is a reverse proxy (net/http/httputil.ReverseProxy), what a Go service in
// front of Bedrock would typically use. With -raw it is the floor: net/http on both sides and
// the body copied both ways (io.Copy), with no parsing, no signing and no header rewriting.
// Nothing that forwards HTTP does less, so a ratio to it is what the gateway's work costs.
//
//	baseline -listen 127.0.0.1:8081 -upstream http://127.0.0.1:4566 [-raw]
//
// It answers GET /metrics itself with go_memstats_mallocs_total, so allocations per request
// are measured the same way for both.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:4566", "where to forward every request")
	raw := flag.Bool("raw", false, "the raw proxy (body copied both ways, nothing else) instead of httputil.ReverseProxy")
	flag.Parse()
	if err := run(*listen, *upstream, *raw); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(listen, upstream string, raw bool) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		return fmt.Errorf("-upstream %q: want http://host:port", upstream)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	handler := newHandler(target, newTransport())
	if raw {
		handler = newRawHandler(target, newTransport())
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	kind := "reverse"
	if raw {
		kind = "raw"
	}
	fmt.Fprintf(os.Stderr, "baseline: %s proxy from %s to %s\n", kind, lis.Addr(), target)
	if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newTransport is tuned like the gateway's upstream client: the default transport keeps only
// two idle connections per host, and a proxy that reconnects for every request would be a
// weak baseline.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// newHandler is the proxy to target, plus GET /metrics.
func newHandler(target *url.URL, transport http.RoundTripper) http.Handler {
	proxy := &httputil.ReverseProxy{
		// Rewrite (rather than Director) adds no X-Forwarded-* headers: the upstream gets
		// the client's request as sent, with only the host changed.
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		// Flush every write at once, so stream events pass through as they arrive, like
		// the gateway's per-event flush.
		FlushInterval: -1,
		Transport:     transport,
		ErrorLog:      log.New(os.Stderr, "baseline: ", log.LstdFlags),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The simulator has no /metrics, so answering it here hides nothing.
		if r.Method == http.MethodGet && r.URL.Path == "/metrics" {
			serveMallocs(w)
			return
		}
		// Without full duplex, the server closes the request body when the response starts,
		// and the transport's final read of that body (checking it is no longer than its
		// Content-Length) can then fail and tear down the upstream connection mid-stream:
		// about one stream in 3,000 was cut (golang/go#40747).
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
}

// newRawHandler is the raw proxy to target, plus GET /metrics: the client's method, path,
// headers and body go upstream as they came (the transport copies the body), and the
// upstream's status, headers and body come back as they came, each read flushed at once so
// stream events pass through as they arrive.
func newRawHandler(target *url.URL, transport http.RoundTripper) http.Handler {
	base := target.Scheme + "://" + target.Host
	buffers := sync.Pool{New: func() any { return new([32 << 10]byte) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/metrics" {
			serveMallocs(w)
			return
		}
		_ = http.NewResponseController(w).EnableFullDuplex() // as in newHandler
		out, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header
		out.ContentLength = r.ContentLength
		resp, err := transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		buf := buffers.Get().(*[32 << 10]byte)
		defer buffers.Put(buf)
		_, _ = io.CopyBuffer(flushWriter{w}, resp.Body, buf[:])
	})
}

// flushWriter flushes each write to the client.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

// serveMallocs writes the one metric the load generator reads, in Prometheus text format,
// with the meaning client_golang gives it (runtime.MemStats.Mallocs).
func serveMallocs(w http.ResponseWriter) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE go_memstats_mallocs_total counter\ngo_memstats_mallocs_total %d\n", ms.Mallocs)
}
