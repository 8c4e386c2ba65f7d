// Package admin is the admin API of the audit trail (docs/PROTOCOL.md 17), served on the
// admin address only: the usage totals between two times, and one call's record. Every
// request needs an admin key (Authorization: Bearer), which is never a client key. Errors
// have the gateway's own JSON error body (docs/PROTOCOL.md 5).
package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/pricing"
)

// Paths of the admin API.
const (
	UsagePath = "/admin/v1/usage"
	CallsPath = "/admin/v1/calls/"
)

// Options configures the admin API.
type Options struct {
	// Store is the audit store; nil when the audit trail is off.
	Store audit.Store
	// Keys are the admin keys, each the key or "sha256:<hex>" of it; none refuses every
	// request.
	Keys []string
}

type handler struct {
	store   audit.Store
	digests [][sha256.Size]byte
}

// Handler serves GET /admin/v1/usage and GET /admin/v1/calls/{request_id}. A key that
// auth.Digest does not take is an error.
func Handler(opts Options) (http.Handler, error) {
	h := &handler{store: opts.Store}
	for i, k := range opts.Keys {
		d, err := auth.Digest(k)
		if err != nil {
			return nil, fmt.Errorf("admin key %d: %w", i+1, err)
		}
		h.digests = append(h.digests, d)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+UsagePath, h.usage)
	mux.HandleFunc("GET "+CallsPath+"{request_id}", h.call)
	return h.authorized(mux), nil
}

// authorized serves next to requests with an admin key.
func (h *handler) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case len(h.digests) == 0:
			fail(w, fault.KindUnauthenticated, "the admin API is off: no admin_keys are set")
		case !h.admits(r.Header.Get("Authorization")):
			fail(w, fault.KindUnauthenticated, "missing or unknown admin key: send Authorization: Bearer <admin key>")
		case h.store == nil:
			fail(w, fault.KindUnavailable, "the audit trail is off (audit: off, and no key sets one)")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// admits reports whether authorization carries an admin key; every key is compared, in
// constant time.
func (h *handler) admits(authorization string) bool {
	scheme, key, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
		return false
	}
	d := sha256.Sum256([]byte(key))
	found := 0
	for _, want := range h.digests {
		found |= subtle.ConstantTimeCompare(d[:], want[:])
	}
	return found == 1
}

// usageAnswer is the body of GET /admin/v1/usage.
type usageAnswer struct {
	From    *time.Time       `json:"from,omitempty"`
	To      *time.Time       `json:"to,omitempty"`
	GroupBy []string         `json:"group_by"`
	Rows    []audit.UsageRow `json:"rows"`
}

func (h *handler) usage(w http.ResponseWriter, r *http.Request) {
	q, err := ParseUsageQuery(r.URL.Query().Get("from"), r.URL.Query().Get("to"), r.URL.Query().Get("group_by"))
	if err != nil {
		fail(w, fault.KindInvalid, err.Error())
		return
	}
	rows, err := h.store.Usage(r.Context(), q)
	if err != nil {
		fail(w, fault.KindUnavailable, "the audit store did not answer: "+clip.String(err.Error(), clip.LogMax))
		return
	}
	for i := range rows {
		rows[i].CostUSD = pricing.Round(rows[i].CostUSD)
	}
	answer := usageAnswer{GroupBy: q.GroupBy, Rows: rows}
	if answer.Rows == nil {
		answer.Rows = []audit.UsageRow{}
	}
	if !q.From.IsZero() {
		answer.From = &q.From
	}
	if !q.To.IsZero() {
		answer.To = &q.To
	}
	write(w, &answer)
}

func (h *handler) call(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("request_id")
	rec, err := h.store.Call(r.Context(), id)
	switch {
	case errors.Is(err, audit.ErrNotFound):
		fail(w, fault.KindNotFound, fmt.Sprintf("no call with request id %s is recorded", clip.Quote(id)))
	case err != nil:
		fail(w, fault.KindUnavailable, "the audit store did not answer: "+clip.String(err.Error(), clip.LogMax))
	default:
		write(w, rec)
	}
}

// ParseUsageQuery reads a usage query's from, to and group_by as the admin API and
// gateway usage take them: a time is RFC 3339 or a UTC date (2026-11-29), a date as to
// meaning the end of that day; either may be empty (unbounded). group_by is a
// comma-separated list of key, model and day; empty is key.
func ParseUsageQuery(from, to, groupBy string) (audit.UsageQuery, error) {
	var q audit.UsageQuery
	var err error
	if q.From, err = parseTime("from", from, false); err != nil {
		return q, err
	}
	if q.To, err = parseTime("to", to, true); err != nil {
		return q, err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return q, errors.New("to: must be after from")
	}
	if groupBy == "" {
		groupBy = audit.ByKey
	}
	for _, g := range strings.Split(groupBy, ",") {
		switch g = strings.TrimSpace(g); g {
		case audit.ByKey, audit.ByModel, audit.ByDay:
			if !slices.Contains(q.GroupBy, g) {
				q.GroupBy = append(q.GroupBy, g)
			}
		default:
			return q, fmt.Errorf("group_by: %s is not key, model or day", clip.Quote(g))
		}
	}
	return q, nil
}

func parseTime(name, s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s is neither an RFC 3339 time (2026-11-29T10:00:00Z) nor a date (2026-11-29)", name, clip.Quote(s))
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

func write(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.MarshalWrite(w, v)
}

func fail(w http.ResponseWriter, kind fault.Kind, message string) {
	nirmata.WriteError(w, "", fault.Failure{Kind: kind, Message: message})
}
