package core

import (
	"strings"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/toolguard"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Result is what one call did, for the transport's access log and metrics. Model and
// ClientType are set once the request was read, the rest once the answer is complete.
type Result struct {
	// Model is the Bedrock model id the call went to: the target that answered, or the
	// last one tried (docs/PROTOCOL.md 14.4).
	Model string
	// RequestModel is the model name the request gave, "" when it gave none; cut to
	// 2,048 bytes.
	RequestModel string
	ClientType   string
	Usage        chat.Usage
	// CostUSD is what the call cost in US dollars: the sum over every Bedrock call it made
	// (the failover attempt that answered, each repair attempt), each priced at the model
	// that answered it (docs/PROTOCOL.md 17.1); 0 for a model without a price.
	CostUSD float64
	// ToolCalls is how many tool calls the answer holds.
	ToolCalls int
	// Repairs is what the translator repaired in the client's history.
	Repairs translate.Stats
	// Ignored lists the JSON paths of request fields accepted without effect: the
	// transport's, then the translator's (docs/PROTOCOL.md 10.1).
	Ignored []string
	// DroppedToolCalls counts the tool calls left out of the answer: all but the first
	// when parallel tool calls are off, all when the tool budget is spent.
	DroppedToolCalls int
	// BudgetExhausted: the request's max_tool_rounds were spent (docs/PROTOCOL.md 13.5).
	// Set once the request is translated, so before any byte of the answer.
	BudgetExhausted bool
	// Thinking is what happened to extended thinking (a chat.Thinking outcome, ""
	// for nothing; docs/PROTOCOL.md 11.4). Set once the request is translated.
	Thinking string
	// FormatInvalid: the request asked for a json_object answer and the answer is not one
	// JSON object (docs/PROTOCOL.md 13.3); it was returned unchanged.
	FormatInvalid bool
	// Validating: the answer's tool calls are checked (docs/PROTOCOL.md 13.2), so a stream
	// holds each call until it is complete and checked, and its outcome comes as a
	// trailer. Set once the request is translated.
	Validating bool
	// ToolValidation is the answer's validation outcome: ValidationInvalid,
	// ValidationRepaired or "". Set once the answer is complete.
	ToolValidation string
	// ToolOutcomes counts the answer's tool calls by the outcome of their check.
	ToolOutcomes toolguard.Outcomes
	// RepairAttempts is how many model calls the repair of the answer's tool calls made.
	RepairAttempts int
	// Region is the AWS region of the target that answered (or was tried last); Failovers
	// how many times the call moved on to another target (docs/PROTOCOL.md 14.4).
	Region    string
	Failovers int
	// FinishReason is why the answer ended; "" when it did not.
	FinishReason chat.FinishReason
	// Request and Answer are the call's request, as its surface decoded it with its
	// defaults applied, and the answer its client got, for the audit trail
	// (Options.Audit): the answer from the metadata level (a stream's holds its tool calls
	// only, below full), the request at full; the answer once it is complete.
	Request *chat.Request
	Answer  *chat.Response
	// StrictUnenforced: the model was offered strict tools it does not hold to their
	// schemas, and the operator's tool_validation off keeps the gateway from repairing
	// their calls (docs/PROTOCOL.md 13.1): x-gateway-strict: unenforced. Set once the
	// request is translated, so before any byte of the answer.
	StrictUnenforced bool
}

// MaxIgnored bounds the names IgnoredValue lists.
const MaxIgnored = 32

// IgnoredValue is Result.Ignored as one header value: the comma-separated paths, at most
// MaxIgnored of them. A path holds what a client named its fields, so each byte outside
// printable ASCII, and each comma, is written as "_": the value stays one valid header
// line and one list.
func IgnoredValue(ignored []string) string {
	var b strings.Builder
	for i, name := range ignored[:min(len(ignored), MaxIgnored)] {
		if i > 0 {
			b.WriteByte(',')
		}
		for j := 0; j < len(name); j++ {
			c := name[j]
			if c < 0x20 || c >= 0x7f || c == ',' {
				c = '_'
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}
