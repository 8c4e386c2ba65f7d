package translate

import (
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// Request translates a chat request into a Converse request for the model (resolved by the
// caller with capabilities.Lookup). It repairs every history shape docs/BEDROCK.md section C
// lists and refuses what it cannot repair with a *fault.RequestError that names the
// field. The returned Plan maps Bedrock's tool names and
// tool-use ids back to the client's; hand it to Response and to the stream translator. Its
// Stats say what was repaired.
//
// Decisions where the contract is silent:
//   - Blank user text is dropped and a message left with nothing is skipped before turns
//     are merged, so an empty user message between two assistant messages disappears and
//     the assistant messages merge; no placeholder is needed except before a leading
//     assistant turn.
//   - In a merged assistant turn, text blocks come before toolUse blocks (the order Claude
//     itself produces; gollm in streaming mode sends its text after the calls).
//   - Tool results are matched to the calls of the assistant turn just before the user turn
//     that holds them, in order, first unanswered call first, so a reused id answers each
//     of its calls once; results are written in the order of the calls.
//   - tool_choice "required" or a function choice with no tools is refused; "auto" and
//     "none" with no tools are ignored.
//   - A request with tools for a model without tool use is refused (fault.ErrUnsupported),
//     unless tool_choice is "none" and the history holds no tool calls (then the tools are
//     simply not sent).
//   - A tool call needs an id and a function name; arguments that are only whitespace
//     count as "" ({}).
//   - Tool messages may carry image parts; they become image blocks of the toolResult and
//     count towards the 20 images. Documents are taken in user messages only, refusal parts
//     in assistant messages only (as text).
//   - Image sizes are checked as 3.75 MiB and document sizes as 4.5 MiB (AWS says "MB");
//     an image whose header cannot be read for its dimensions is left to Bedrock.
//   - A document's format comes from its data URL's media type, else from its filename's
//     extension, so application/octet-stream with report.pdf is a PDF.
//   - Document names keep only ASCII letters and digits besides Bedrock's punctuation; the
//     extension stays, its dot a space ("report.pdf" is "report pdf"). A user turn with
//     documents and no text gets "Attached: <name>, <name>".
//   - temperature and top_p must lie in [0, 1], Bedrock's range, not OpenAI's [0, 2].
//   - A history that ends with the assistant's tool calls (no results yet) gets a final
//     user turn of synthesized error results, counted in Stats.SynthesizedResults, on
//     every model; a trailing assistant turn with only text is kept (prefill) where the
//     model allows it and refused where it does not.
//   - response_format json_schema (format.go): the schema's root "type" must be "object",
//     written out; the synthetic answer tool is forced only when the model may call no tool
//     of the client's (none given, tool_choice "none", the tool budget spent) and no
//     reasoning switch is sent, whatever the family; a model with neither structured output
//     nor tool use is refused.
func Request(req *chat.Request, model capabilities.Model) (*bedrock.ConverseRequest, *Plan, error) {
	return RequestWith(req, model, Options{DefaultMaxTokens: DefaultMaxTokens})
}

// Options are the gateway's settings that shape a translation, and what the gateway knows
// of the call beyond the request. Request translates with the default configuration.
type Options struct {
	// NoAutoCache turns the automatic prompt-cache points off (prompt_caching: off,
	// docs/PROTOCOL.md 12.2); the client's cache_control hints still count.
	NoAutoCache bool
	// ReasoningEffort is the reasoning_effort of a request that sets neither it nor
	// thinking (an alias's default, docs/PROTOCOL.md 14.1). Unlike the client's own, it is
	// not listed as ignored on a model without reasoning.
	ReasoningEffort string
	// DefaultMaxTokens is the maxTokens of a request that sets no max_tokens
	// (default_max_tokens, docs/PROTOCOL.md 14.5), capped at the model's maximum output
	// where it is known; 0 sends none.
	DefaultMaxTokens int32
	// OtherModel: the call fails over to another foundation model than the one that
	// answered the conversation so far (docs/PROTOCOL.md 14.4). The history's reasoning
	// blocks are bound to that one (docs/BEDROCK.md G9), so none is sent and thinking is
	// off, the outcome chat.ThinkingFailover.
	OtherModel bool
	// FirstResultOnly: the client is known to answer only the first of several tool
	// calls (docs/PROTOCOL.md 13.4), so the answer keeps one call unless the request sets
	// parallel_tool_calls or its history already decides.
	FirstResultOnly bool
}

// RequestWith is Request under the gateway's settings.
func RequestWith(req *chat.Request, model capabilities.Model, opts Options) (*bedrock.ConverseRequest, *Plan, error) {
	if n := req.MaxToolRounds; n != nil && *n < 0 {
		return nil, nil, invalidf("max_tool_rounds must be at least 0, got %d", *n)
	}
	if err := checkHints(req); err != nil {
		return nil, nil, err
	}
	exhausted := budgetSpent(req)
	if exhausted {
		// The model is offered no tools: as tool_choice "none", the tools go only where
		// the history needs them, without toolChoice or the parallel field (BEDROCK.md J).
		r := *req
		r.ToolChoice = chat.ToolChoice{Mode: chat.ChoiceNone}
		req = &r
	}
	// Each part of the Converse request is built once, in this order: names first, since
	// every valid client name and id must be reserved before any substitute is handed out;
	// messages take a toolUseId per call; tools need the names and whether the history used
	// tools (rule 13). The order is also the order in which a request's faults are found.
	names, err := newNamer(req)
	if err != nil {
		return nil, nil, err
	}
	stats := &names.names.Stats
	format, err := planFormat(req, model, names)
	if err != nil {
		return nil, nil, err
	}
	th, err := planThinking(req, model, opts.ReasoningEffort, names.names)
	if err != nil {
		return nil, nil, err
	}
	out := &bedrock.ConverseRequest{}
	if out.System, out.Messages, err = messages(req.Messages, names, model, th.on && th.claude, stats); err != nil {
		return nil, nil, err
	}
	names.names.Thinking = th.settle(req, out.Messages, opts.OtherModel)
	names.names.ThinkingOn = th.on && th.claude
	if out.InferenceConfig, err = inference(req, model, names.names); err != nil {
		return nil, nil, err
	}
	out.InferenceConfig = th.applyInference(out.InferenceConfig, req, model, opts.DefaultMaxTokens, names.names)
	if err := th.topK(req, model, names.names); err != nil {
		return nil, nil, err
	}
	th.betas(req, model, names.names)
	if out.ToolConfig, err = toolConfig(req, names, model, stats); err != nil {
		return nil, nil, err
	}
	var note string
	out.ToolConfig, note = format.offer(out.ToolConfig, req, model, th.on)
	names.names.OneCall = oneCall(req, opts.FirstResultOnly, stats)
	if exhausted {
		names.names.BudgetExhausted = true
		out.System = append(out.System, bedrock.SystemBlock{Text: budgetNote})
	}
	if err := format.apply(out, note, names.names); err != nil {
		return nil, nil, err
	}
	if names.names.OneCall && len(req.Tools) > 0 {
		th.fields.ToolChoice = disableParallel(out.ToolConfig, req.ToolChoice, model)
	}
	out.AdditionalModelRequestFields = th.fields.encode()
	out.RequestMetadata, out.ServiceTier = requestMetadata(req), serviceTier(req)
	// Last, so it sees every block of the request as Bedrock will.
	promptCache(out, req, model, opts, names)
	return out, names.names, nil
}

func ptr[T any](v T) *T { return &v }
