package toolguard

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Caller makes a Check's repair attempts: each is a whole model call of the request.
type Caller interface {
	// Allowed reserves an attempt against the key's limits and reports whether it may be
	// made.
	Allowed(ctx context.Context) bool
	// Call makes one Converse call of req on the request's current target, bounded by
	// upstream_timeout, and returns its answer and the assistant message Bedrock returned.
	Call(ctx context.Context, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error)
}

// Review checks the tool calls of first, an answer to sent whose assistant message Bedrock
// returned as turn, and settles them (docs/PROTOCOL.md 13.2). A nil Check counts the
// calls unchecked. When a call in
// repair mode is invalid, the model is asked to correct its calls: the original request,
// its turn verbatim and an error result per call, up to max_repair_attempts times, each
// attempt after the original request carrying only the latest attempt's turn. The answer
// keeps first's reasoning and text and takes the last attempt's calls and finish reason,
// with the usage of every attempt. An attempt that fails upstream or calls no tool ends
// the repair: the last invalid calls go back with their violations and finish reason
// tool_calls, never silently. Only the client leaving (ctx done) is an error here. What
// it did is in the Check's Outcome, Outcomes and Attempts. The caller holds a concurrency
// slot: repair attempts are calls of the same request, made one after another within it.
func (c *Check) Review(ctx context.Context, first *chat.Response, turn bedrock.Message, sent *bedrock.ConverseRequest, call Caller) (*chat.Response, error) {
	if c == nil {
		return first, nil // counted unchecked by the Result's reader
	}
	if len(first.ToolCalls) == 0 && first.AnswerID == "" {
		return first, nil
	}
	verdicts := c.checkAll(first)
	if !needsRepair(verdicts) {
		c.Outcome = settle(first.ToolCalls, verdicts, false, &c.Outcomes)
		return first, nil
	}
	last, lastTurn, lastVerdicts := first, turn, verdicts
	usage := first.Usage
	repaired := false
	for attempt := 1; attempt <= c.g.opts.MaxRepairAttempts; attempt++ {
		if !call.Allowed(ctx) {
			c.g.log.Info("tool-call repair stopped: the key's token limit has no room for another model call",
				zap.String("request_id", c.requestID), zap.String("key_id", c.keyID))
			break
		}
		c.logRepair(attempt, last.ToolCalls, lastVerdicts)
		c.Attempts++
		req := translate.RepairRequest(sent, lastTurn, violationsOf(lastTurn, c.plan, last, lastVerdicts))
		resp, t, err := call.Call(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err // the client left, or the drain ended the call
			}
			break // upstream_failed has logged and counted it; the last invalid calls go back
		}
		usage = addUsage(usage, resp.Usage)
		if len(resp.ToolCalls) == 0 && resp.AnswerID == "" {
			break
		}
		last, lastTurn, lastVerdicts = resp, t, c.checkAll(resp)
		if !needsRepair(lastVerdicts) {
			repaired = true
			break
		}
	}
	// With max_repair_attempts 0 no attempt is made: the calls go back unrepaired.
	out := *first
	out.ToolCalls = last.ToolCalls
	if last.AnswerID != "" { // the answer is the answer tool's input: the last attempt's
		out.Text, out.AnswerID = last.Text, last.AnswerID
	}
	out.Finish, out.StopReason, out.DroppedToolCalls = last.Finish, last.StopReason, last.DroppedToolCalls
	if !repaired {
		out.Finish = chat.FinishToolCalls // the calls go back, invalid
	}
	out.Usage = usage
	c.Outcome = settle(out.ToolCalls, lastVerdicts, true, &c.Outcomes)
	return &out, nil
}

// violationsOf are the violations of the invalid calls of resp by the Bedrock toolUseId
// of their block in turn, the assistant message resp came from: calls carry the client's
// ids, which plan maps Bedrock's to; the answer tool's call (the verdict after the
// calls') carries Bedrock's. Blocks are matched by id, never by position: the answer
// leaves some of the turn's blocks out (13.4's drops, the answer tool's call).
func violationsOf(turn bedrock.Message, plan *translate.Plan, resp *chat.Response, vs []verdict) map[string][]string {
	calls := resp.ToolCalls
	byClientID := make(map[string][]string, len(calls))
	for i := range calls {
		if len(vs[i].violations) > 0 {
			byClientID[calls[i].ID] = vs[i].violations
		}
	}
	out := make(map[string][]string, len(byClientID)+1)
	if len(vs) > len(calls) && len(vs[len(calls)].violations) > 0 {
		out[resp.AnswerID] = vs[len(calls)].violations
	}
	for _, b := range turn.Content {
		if b.ToolUse == nil || b.ToolUse.ToolUseID == resp.AnswerID {
			continue
		}
		if v, ok := byClientID[plan.ToolCallID(b.ToolUse.ToolUseID)]; ok {
			out[b.ToolUse.ToolUseID] = v
		}
	}
	return out
}

func addUsage(a, b chat.Usage) chat.Usage {
	return chat.Usage{
		PromptTokens: a.PromptTokens + b.PromptTokens, CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		TotalTokens:     a.TotalTokens + b.TotalTokens,
		CacheReadTokens: a.CacheReadTokens + b.CacheReadTokens, CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens,
	}
}

// maxLoggedTools bounds the tool names a repair's log line lists.
const maxLoggedTools = 8

// logRepair notes a repair attempt: counts and tool names, never an argument.
func (c *Check) logRepair(attempt int, calls []chat.ToolCall, vs []verdict) {
	var tools []string
	invalid := 0
	for i, v := range vs {
		if len(v.violations) == 0 {
			continue
		}
		invalid++
		name := "response_format" // the answer tool's verdict follows the calls'
		if i < len(calls) {
			name = clip.String(calls[i].Name, clip.QuoteMax)
		}
		if len(tools) < maxLoggedTools && !slices.Contains(tools, name) {
			tools = append(tools, name)
		}
	}
	c.g.log.Info("repairing tool calls", zap.String("request_id", c.requestID), zap.String("model", clip.String(c.model, clip.LogMax)),
		zap.Int("attempt", attempt), zap.Int("tool_calls", len(calls)), zap.Int("invalid_tool_calls", invalid), zap.Strings("tools", tools))
}
