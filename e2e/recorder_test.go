//go:build clients

package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// recorder stands in for a provider's API in the capture tests: it records every request a
// pinned client program sends, whatever its path, and answers POST to the one path it
// serves with answer (given the request's ordinal and body); any other request is a 404.
type recorder struct {
	*httptest.Server
	path   string
	answer func(w http.ResponseWriter, n int, body []byte)
	mu     sync.Mutex
	reqs   []captured
}

func newRecorder(t *testing.T, path string, answer func(w http.ResponseWriter, n int, body []byte)) *recorder {
	s := &recorder{path: path, answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	headers := map[string]string{}
	for name := range r.Header {
		headers[name] = r.Header.Get(name)
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, captured{Method: r.Method, Path: r.URL.RequestURI(), Headers: headers, Body: body})
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	s.answer(w, n, body)
}

// requests returns what the recorder received so far.
func (s *recorder) requests() []captured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}
