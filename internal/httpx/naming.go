package httpx

import (
	"net/http"
	"strings"
)

// NamingWriter writes a call's answer with HeaderIgnored naming the fields as the client's
// body does. The core lists the surface's own paths first, already in its names, then
// those the translator dropped, by their chat-model paths (reasoning_effort, stop[1]):
// Rename turns each of these into the surface's (reasoning.effort, stop_sequences.1) as
// the headers go out, on a unary answer and a stream alike; Also names a header of the
// surface's that carries the same list. Until Rename is set (the call is decoded) the
// paths go out as they are.
type NamingWriter struct {
	http.ResponseWriter
	Rename func(path string) string
	// Own is how many of the listed paths are the surface's own.
	Own   int
	Also  string
	wrote bool
	named string // the value name last set, which it leaves as it is
}

func (w *NamingWriter) WriteHeader(code int) {
	w.rename()
	w.ResponseWriter.WriteHeader(code)
}

func (w *NamingWriter) Write(b []byte) (int, error) {
	w.rename()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush and set deadlines through it.
func (w *NamingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Name sets the headers to ignored (the core's list), renamed, at once: for an answer the
// surface's middleware writes itself (a stream that fails before its first event), which
// does not go through this writer.
func (w *NamingWriter) Name(ignored []string) {
	SetIgnored(w.Header(), ignored)
	w.name()
}

func (w *NamingWriter) rename() {
	if w.wrote {
		return
	}
	w.wrote = true
	w.name()
}

// name renames the paths in HeaderIgnored and copies them to Also, unless it named them
// already (Name, then a write through the writer).
func (w *NamingWriter) name() {
	h := w.Header()
	v := h.Get(HeaderIgnored)
	if v == "" || v == w.named {
		return
	}
	if w.Rename != nil {
		names := strings.Split(v, ",")
		for i := w.Own; i < len(names); i++ {
			names[i] = w.Rename(names[i])
		}
		v = strings.Join(names, ",")
		h.Set(HeaderIgnored, v)
	}
	if w.Also != "" {
		h.Set(w.Also, v)
	}
	w.named = v
}
