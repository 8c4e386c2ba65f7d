package bedrocksim

import (
	"context"
	"net/http"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// event is one ConverseStream event before framing.
type event struct {
	typ     string // the :event-type header
	payload any    // marshalled as the frame's JSON payload
}

// streamEvents lays an answer out in Bedrock's order: messageStart, the reasoning blocks
// (deltas only: reasoning text in pieces, then one signature; a redacted block in one delta),
// the text block (deltas only: Bedrock sends no contentBlockStart for text either), one block
// per tool call (start, input fragments, stop), messageStop with the stop reason, then
// metadata with the usage.
func streamEvents(a answer, usage tokenUsage, latencyMs int64) []event {
	evs := []event{{eventMessageStart, messageStartEvent{Role: roleAssistant}}}
	index := 0
	delta := func(d reasoningDelta) {
		evs = append(evs, event{eventContentBlockDelta, contentBlockDeltaEvent{
			ContentBlockIndex: index, Delta: contentBlockDelta{ReasoningContent: &d}}})
	}
	for _, r := range a.Reasoning {
		if rt := r.ReasoningText; rt != nil {
			for _, frag := range splitText(rt.Text) {
				delta(reasoningDelta{Text: &frag})
			}
			if rt.Signature != "" {
				delta(reasoningDelta{Signature: &rt.Signature})
			}
		} else {
			delta(reasoningDelta{RedactedContent: r.RedactedContent})
		}
		evs = append(evs, event{eventContentBlockStop, contentBlockStopEvent{ContentBlockIndex: index}})
		index++
	}
	if a.Text != "" {
		for _, frag := range splitText(a.Text) {
			evs = append(evs, event{eventContentBlockDelta, contentBlockDeltaEvent{
				ContentBlockIndex: index, Delta: contentBlockDelta{Text: &frag}}})
		}
		evs = append(evs, event{eventContentBlockStop, contentBlockStopEvent{ContentBlockIndex: index}})
		index++
	}
	for _, c := range a.Calls {
		evs = append(evs, event{eventContentBlockStart, contentBlockStartEvent{
			ContentBlockIndex: index,
			Start:             contentBlockStart{ToolUse: toolUseStart{ToolUseID: c.ID, Name: c.Name}}}})
		// A call without arguments sends no input fragment at all, as Bedrock may: clients
		// must then supply "{}" themselves.
		if string(c.Input) != "{}" {
			for _, frag := range splitJSON(string(c.Input)) {
				evs = append(evs, event{eventContentBlockDelta, contentBlockDeltaEvent{
					ContentBlockIndex: index, Delta: contentBlockDelta{ToolUse: &toolUseDelta{Input: frag}}}})
			}
		}
		evs = append(evs, event{eventContentBlockStop, contentBlockStopEvent{ContentBlockIndex: index}})
		index++
	}
	evs = append(evs,
		event{eventMessageStop, messageStopEvent{StopReason: a.StopReason}},
		event{eventMetadata, metadataEvent{Usage: usage, Metrics: metrics{LatencyMs: latencyMs}}},
	)
	return evs
}

// writeStream answers ConverseStream. A stream_exception or truncate fault cuts the stream
// after fault.afterEvents() events.
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, a answer, usage tokenUsage, fault *Fault) {
	fw := frameWriter{w: w, rc: http.NewResponseController(w), enc: eventstream.NewEncoder()}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	if fw.rc.Flush() != nil || !sleep(ctx, s.opts.FirstTokenDelay) {
		return
	}
	events := streamEvents(a, usage, s.latencyMs())
	cut := len(events) // index of the first event not sent
	if fault != nil {
		// Never past messageStop: a faulty stream must not pass for a complete one.
		cut = min(fault.afterEvents(), len(events)-2)
	}
	deltas := 0
	for _, ev := range events[:cut] {
		if ev.typ == eventContentBlockDelta {
			if deltas > 0 && !sleep(ctx, s.opts.DeltaDelay) {
				return
			}
			deltas++
		}
		if fw.event(ev) != nil {
			return // the client went away
		}
	}
	if fault != nil && fault.Kind == FaultStreamException {
		_ = fw.exception(fault.exceptionType(), errorMessage(fault.exceptionCode()))
	}
	// truncate: the body simply ends, with no messageStop.
}

// frameWriter writes event-stream frames and flushes each one, so every event reaches the
// client as soon as it is produced.
type frameWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	enc *eventstream.Encoder
}

func (fw frameWriter) event(ev event) error {
	var msg eventstream.Message
	msg.Headers.Set(":event-type", eventstream.StringValue(ev.typ))
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Headers.Set(":message-type", eventstream.StringValue("event"))
	msg.Payload = marshal(ev.payload)
	return fw.write(msg)
}

func (fw frameWriter) exception(exceptionType, message string) error {
	var msg eventstream.Message
	msg.Headers.Set(":exception-type", eventstream.StringValue(exceptionType))
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
	msg.Payload = marshal(errorBody{Message: message})
	return fw.write(msg)
}

func (fw frameWriter) write(msg eventstream.Message) error {
	if err := fw.enc.Encode(fw.w, msg); err != nil {
		return err
	}
	return fw.rc.Flush()
}

// splitText cuts text into delta-sized fragments: one word (with its trailing spaces) each,
// longer words in pieces of at most 8 bytes, and never fewer than 3 fragments when the text
// has 3 runes, so clients always see text assembled from several deltas.
func splitText(s string) []string {
	var frags []string
	for len(s) > 0 {
		end := 0
		for end < len(s) && s[end] != ' ' {
			end++
		}
		for end < len(s) && s[end] == ' ' {
			end++
		}
		frags = append(frags, splitRunes(s[:end], 8)...)
		s = s[end:]
	}
	if len(frags) < 3 {
		whole := ""
		for _, f := range frags {
			whole += f
		}
		n := utf8.RuneCountInString(whole)
		if n >= 3 {
			return splitRunes(whole, (len(whole)+2)/3)
		}
	}
	return frags
}

// splitJSON cuts tool input JSON into several fragments of a few bytes, as Bedrock does.
func splitJSON(s string) []string {
	size := 8
	if len(s) <= 2*size {
		size = (len(s) + 1) / 2
	}
	return splitRunes(s, size)
}

// splitRunes cuts s into pieces of at most max bytes (more when a single rune is longer)
// without breaking a UTF-8 sequence: each fragment is sent as a JSON string, where a broken
// sequence would turn into U+FFFD.
func splitRunes(s string, max int) []string {
	if max < 1 {
		max = 1
	}
	var out []string
	for len(s) > 0 {
		end := 0
		for end < len(s) {
			_, size := utf8.DecodeRuneInString(s[end:])
			if end > 0 && end+size > max {
				break
			}
			end += size
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
