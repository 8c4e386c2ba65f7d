package metrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Label values the guards produce on their own.
const (
	// LabelNone is recorded for an empty label value.
	LabelNone = "none"
	// LabelOther is recorded for a client-controlled value beyond its cap of distinct values.
	LabelOther = "other"
)

// Bounds on the client- and upstream-controlled labels; see the package documentation.
const (
	// MaxModels is how many distinct model values get their own series.
	MaxModels = 100
	// MaxModelLen is the longest model value in bytes; Bedrock inference-profile ARNs
	// run past 64, so models get more room than client types.
	MaxModelLen = 128
	// MaxClientTypes is how many distinct client_type values get their own series.
	MaxClientTypes = 50
	// MaxClientTypeLen is the longest client_type value in bytes.
	MaxClientTypeLen = 64
	// MaxErrorCodes is how many distinct upstream error codes get their own series;
	// Bedrock has about a dozen.
	MaxErrorCodes = 32
	// MaxErrorCodeLen is the longest error_code value in bytes.
	MaxErrorCodeLen = 64
	// MaxParams is how many distinct param values of gateway_params_dropped_total get
	// their own series; MaxParamLen the longest in bytes.
	MaxParams   = 64
	MaxParamLen = 64
)

// labelSet bounds the distinct values of one label. It is safe for concurrent use, and
// read-mostly: a value already admitted is one lock-free sync.Map load; only a newcomer
// takes the mutex, and once the set is full, not even that.
type labelSet struct {
	max    int // distinct values admitted
	maxLen int // bytes per value

	// admitted maps each admitted value to itself: the stored copy is what callers get
	// back, so a series never pins the (possibly large) buffer the caller's string points
	// into.
	admitted sync.Map
	full     atomic.Bool

	mu sync.Mutex // serializes admission
	n  int        // values admitted; guarded by mu
}

func newLabelSet(max, maxLen int) *labelSet {
	return &labelSet{max: max, maxLen: maxLen}
}

// value returns the label value to record for v, admitting v while the set has room.
func (s *labelSet) value(v string) string { return s.get(v, true) }

// lookup returns the label value to record for v without admitting it: "other" unless v
// was admitted already.
func (s *labelSet) lookup(v string) string { return s.get(v, false) }

func (s *labelSet) get(v string, admit bool) string {
	if v == "" {
		return LabelNone
	}
	if got, ok := s.admitted.Load(v); ok { // admitted, hence already clean
		return got.(string)
	}
	c := clean(v, s.maxLen)
	if c == LabelNone || c == LabelOther {
		return c
	}
	if c != v { // the truncated or repaired value may be admitted already
		if got, ok := s.admitted.Load(c); ok {
			return got.(string)
		}
	}
	if !admit || s.full.Load() {
		return LabelOther
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if got, ok := s.admitted.Load(c); ok {
		return got.(string)
	}
	if s.n >= s.max {
		return LabelOther
	}
	c = strings.Clone(c)
	s.admitted.Store(c, c)
	s.n++
	s.full.Store(s.n >= s.max)
	return c
}

// reserve admits v whatever the cap: for values the operator configured.
func (s *labelSet) reserve(v string) {
	if c := clean(v, s.maxLen); c != "" && c != LabelNone && c != LabelOther {
		c = strings.Clone(c)
		s.admitted.Store(c, c)
	}
}

// clean makes v a valid Prometheus label value of at most maxLen bytes.
func clean(v string, maxLen int) string {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if len(v) <= maxLen {
		return v
	}
	cut := maxLen
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}

// fixed is the value to record for a label the gateway's own code chooses: used as given,
// except that "" is "none" and invalid UTF-8 (a bug, but not worth a panic) is repaired.
func fixed(v string) string {
	if v == "" {
		return LabelNone
	}
	if !utf8.ValidString(v) {
		return strings.ToValidUTF8(v, "\uFFFD")
	}
	return v
}
