// Package audit keeps a record of each call the gateway serves, when the operator asks
// for one (docs/PROTOCOL.md 17): who called, from which client, which model answered,
// what it used and cost, what became of its tool calls, and with the full level the
// request and the answer themselves. Records are written off the request path (Writer)
// to a Store: an embedded file for one process, or PostgreSQL shared by replicas (Open).
package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Level is how much of a call is recorded.
type Level uint8

const (
	// Off records nothing.
	Off Level = iota
	// Metadata records everything but the request's and the answer's content.
	Metadata
	// Full records the request and the answer too, each bounded.
	Full
)

// The levels' names in the config.
const (
	LevelOff      = "off"
	LevelMetadata = "metadata"
	LevelFull     = "full"
)

// ParseLevel parses a level's name; "" is Off.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "", LevelOff:
		return Off, nil
	case LevelMetadata:
		return Metadata, nil
	case LevelFull:
		return Full, nil
	}
	return Off, fmt.Errorf("%q is not an audit level: give off, metadata or full", s)
}

func (l Level) String() string {
	switch l {
	case Metadata:
		return LevelMetadata
	case Full:
		return LevelFull
	}
	return LevelOff
}

// Record is one call. Strings a client controls are bounded before they get here
// (Writer.Write clips them); Request and Answer are bounded by audit_max_content_bytes.
// It never holds the client's key: Key is the key's name under keys, or a digest prefix.
type Record struct {
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"`
	Key       string    `json:"key"`
	// Surface is the API the call came through: nirmata, openai, anthropic, responses,
	// grpc.
	Surface    string `json:"surface"`
	UserAgent  string `json:"user_agent,omitempty"`
	ClientType string `json:"client_type,omitempty"`
	// SessionID is the client's session header: X-Claude-Code-Session-Id, Codex's
	// session_id, or X-Session-Id.
	SessionID string `json:"session_id,omitempty"`
	// Stream: the answer was streamed.
	Stream bool `json:"stream"`
	// ModelRequested is the model name the request gave; ModelServed the Bedrock model id
	// that answered (or was tried last), in Region, after Failovers moves to another
	// target.
	ModelRequested string `json:"model_requested,omitempty"`
	ModelServed    string `json:"model_served,omitempty"`
	Region         string `json:"region,omitempty"`
	Failovers      int    `json:"failovers"`
	// Status is the HTTP status of the answer (for gRPC, the status its code maps to);
	// Code the outcome's snake-case gRPC code ("ok", "resource_exhausted"); ErrorKind the
	// kind of a failure ("" on success).
	Status       int    `json:"status"`
	Code         string `json:"code"`
	ErrorKind    string `json:"error_kind,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`

	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	LatencyMs        float64 `json:"latency_ms"`

	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolValidation is the answer's validation outcome (invalid, repaired) and Repairs
	// how many model calls repairing its tool calls took.
	ToolValidation string `json:"tool_validation,omitempty"`
	Repairs        int    `json:"repairs"`
	// Decisions the gateway took for the call: the tool-round budget spent, tool calls
	// dropped, parallel calls turned off.
	BudgetExhausted  bool `json:"budget_exhausted,omitzero"`
	DroppedToolCalls int  `json:"dropped_tool_calls,omitzero"`
	ParallelDisabled bool `json:"parallel_disabled,omitzero"`

	// Request and Answer are the call's request and answer in the chat model's JSON form
	// (chat.Request, chat.Response), kept at the full level only. One larger than
	// audit_max_content_bytes is kept as a Clipped value instead, and Clipped is set.
	Request jsontext.Value `json:"request,omitempty"`
	Answer  jsontext.Value `json:"answer,omitempty"`
	Clipped bool           `json:"clipped,omitzero"`
}

// ToolCall is one tool call of the answer: its name, its id, and the outcome of its check
// (valid, invalid, repaired, unchecked).
type ToolCall struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Outcome string `json:"outcome,omitempty"`
}

// Clipped is what a Request or Answer larger than the bound holds instead: its size, and
// its first bytes as text.
type Clipped struct {
	Clipped bool   `json:"clipped"`
	Bytes   int    `json:"bytes"`
	Prefix  string `json:"prefix"`
}

// Groupings of usage.
const (
	ByKey   = "key"
	ByModel = "model"
	ByDay   = "day"
)

// UsageQuery asks for the totals of the records made in [From, To), grouped by the
// dimensions GroupBy names (ByKey, ByModel, ByDay; none is one row of everything).
type UsageQuery struct {
	From, To time.Time
	GroupBy  []string
}

// UsageRow is the totals of one group. The dimensions the query did not group by are "".
// Day is the UTC date, 2006-01-02; Model is the model served.
type UsageRow struct {
	Key              string  `json:"key"`
	Model            string  `json:"model"`
	Day              string  `json:"day"`
	Requests         int64   `json:"requests"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// Schemes are the URL schemes an audit_dsn may have; a DSN without one is a file path.
var Schemes = []string{"postgres", "postgresql", "sqlite", "file"}

// ErrNotFound is the error of Store.Call for an id no record has.
var ErrNotFound = errors.New("no call has that request id")

// Store keeps records. Implementations are safe for concurrent use.
type Store interface {
	// Insert adds records, in one transaction.
	Insert(ctx context.Context, records []Record) error
	// Call is the record of requestID, or ErrNotFound.
	Call(ctx context.Context, requestID string) (*Record, error)
	// Usage is the totals of q, ordered by day, key, model.
	Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error)
	// Purge deletes the records made before t, and says how many it deleted.
	Purge(ctx context.Context, before time.Time) (int64, error)
	Close() error
}
