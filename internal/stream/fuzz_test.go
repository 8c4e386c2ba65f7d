package stream_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/stream"
)

// The fuzz input is a program of ops, each an op byte and its operands:
//
//	0 messageStart            1 contentBlockStart{toolUse} block
//	2 text delta block n data 3 tool input delta block n data
//	4 contentBlockStop block  5 messageStop reason
//	6 metadata in out         7 reasoning delta block
//	8 unknown event type      9 contentBlockStart without toolUse block
//
// block: a byte, < 0xF0 for block b%16, else a huge index. n: a byte; with its high bit
// clear, the next n bytes are the data (invalid UTF-8 replaced, as JSON decoding does); with it set, the data is the next (n&7)+1 bytes of
// fuzzJSON (a fresh copy per block), so a block fed only such pieces streams valid JSON.
const fuzzJSON = `{"k":[1,2.5e3,true,null,"s\u00e9\n"],"o":{"n":{}},"big":12345678901234567890}`

var fuzzReasons = []string{
	bedrock.StopEndTurn, bedrock.StopToolUse, bedrock.StopMaxTokens, bedrock.StopStopSequence,
	bedrock.StopGuardrailIntervened, bedrock.StopContentFiltered, bedrock.StopModelContextWindowExceeded,
	bedrock.StopMalformedModelOutput, bedrock.StopMalformedToolUse, "future_reason",
}

const (
	opMessageStart = iota
	opToolStart
	opText
	opToolInput
	opBlockStop
	opMessageStop
	opMetadata
	opReasoning
	opUnknown
	opOtherStart
	numOps
)

type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

func (r *fuzzReader) block() (int, bool) {
	c, ok := r.byte()
	if c >= 0xF0 {
		return int(c) << 24, ok
	}
	return int(c % 16), ok
}

// decodeProgram turns fuzz bytes into events.
func decodeProgram(data []byte) []bedrock.StreamEvent {
	r := &fuzzReader{b: data}
	jsonPos := map[int]int{} // block → bytes of fuzzJSON handed out
	starts := 0
	var evs []bedrock.StreamEvent
	for {
		op, ok := r.byte()
		if !ok {
			return evs
		}
		switch op % numOps {
		case opMessageStart:
			evs = append(evs, evMessageStart())
		case opToolStart:
			b, _ := r.block()
			starts++
			evs = append(evs, evToolStart(b, "tooluse_"+strconv.Itoa(starts), "tool_"+strconv.Itoa(b)))
		case opText, opToolInput:
			b, _ := r.block()
			n, _ := r.byte()
			var s string
			if n&0x80 != 0 {
				pos := jsonPos[b]
				end := min(pos+int(n&7)+1, len(fuzzJSON))
				s, jsonPos[b] = fuzzJSON[pos:end], end
			} else {
				// Events come out of JSON decoding, so their strings are valid UTF-8.
				k := min(int(n), len(r.b))
				s, r.b = strings.ToValidUTF8(string(r.b[:k]), "\uFFFD"), r.b[k:]
			}
			if op%numOps == opText {
				evs = append(evs, evText(b, s))
			} else {
				evs = append(evs, evToolInput(b, s))
			}
		case opBlockStop:
			b, _ := r.block()
			evs = append(evs, evStop(b))
		case opMessageStop:
			c, _ := r.byte()
			evs = append(evs, evMessageStop(fuzzReasons[int(c)%len(fuzzReasons)]))
		case opMetadata:
			in, _ := r.byte()
			out, _ := r.byte()
			evs = append(evs, evMetadata(int32(in), int32(out)))
		case opReasoning:
			b, _ := r.block()
			evs = append(evs, bedrock.StreamEvent{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{
				ContentBlockIndex: b, Delta: bedrock.ContentBlockDelta{ReasoningContent: &bedrock.ReasoningDelta{Text: ptr("hmm")}}}})
		case opUnknown:
			evs = append(evs, bedrock.StreamEvent{Type: "futureEvent"})
		case opOtherStart:
			b, _ := r.block()
			evs = append(evs, bedrock.StreamEvent{Type: bedrock.EventContentBlockStart, ContentBlockStart: &bedrock.ContentBlockStartEvent{ContentBlockIndex: b}})
		}
	}
}

// encodeProgram turns a fixture's events into a fuzz program (a seed).
func encodeProgram(evs []bedrock.StreamEvent) []byte {
	var p []byte
	data := func(s string) {
		if len(s) > 0x7f {
			s = s[:0x7f]
		}
		p = append(p, byte(len(s)))
		p = append(p, s...)
	}
	for _, ev := range evs {
		switch {
		case ev.MessageStart != nil:
			p = append(p, opMessageStart)
		case ev.ContentBlockStart != nil && ev.ContentBlockStart.Start.ToolUse != nil:
			p = append(p, opToolStart, byte(ev.ContentBlockStart.ContentBlockIndex))
		case ev.ContentBlockStart != nil:
			p = append(p, opOtherStart, byte(ev.ContentBlockStart.ContentBlockIndex))
		case ev.ContentBlockDelta != nil:
			d := ev.ContentBlockDelta
			switch {
			case d.Delta.Text != nil:
				p = append(p, opText, byte(d.ContentBlockIndex))
				data(*d.Delta.Text)
			case d.Delta.ToolUse != nil:
				p = append(p, opToolInput, byte(d.ContentBlockIndex))
				data(d.Delta.ToolUse.Input)
			default:
				p = append(p, opReasoning, byte(d.ContentBlockIndex))
			}
		case ev.ContentBlockStop != nil:
			p = append(p, opBlockStop, byte(ev.ContentBlockStop.ContentBlockIndex))
		case ev.MessageStop != nil:
			reason := 0
			for i, r := range fuzzReasons {
				if r == ev.MessageStop.StopReason {
					reason = i
				}
			}
			p = append(p, opMessageStop, byte(reason))
		case ev.Metadata != nil:
			p = append(p, opMetadata, 0, 0)
			if u := ev.Metadata.Usage; u != nil {
				p[len(p)-2], p[len(p)-1] = byte(u.InputTokens), byte(u.OutputTokens)
			}
		default:
			p = append(p, opUnknown)
		}
	}
	return p
}

// FuzzMachine checks, for any sequence of events: no panic; errors wrap
// fault.ErrUpstream; tool-call indices are dense with every index's header first;
// fragments are non-empty; done comes at most once and last, and exactly when the stream
// is complete; at done, each index's fragments concatenate to exactly what Bedrock sent
// for its block ("{}" when nothing), so valid JSON in is valid JSON out; end markers come
// once per call after its fragments; the chunked rendering has one ToolStart per call
// with those arguments and nothing after Done or Error.
func FuzzMachine(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*"+fixtureSuffix))
	require.NoError(f, err)
	for _, file := range files {
		f.Add(encodeProgram(fixtureEvents(f, file)))
	}
	f.Add([]byte{opToolStart, 1, opToolStart, 2, opToolInput, 1, 0x87, opToolInput, 2, 0x83, opToolInput, 1, 0xff,
		opToolInput, 2, 0xff, opBlockStop, 2, opMessageStop, 1, opMetadata, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		evs := decodeProgram(data)
		out, err := run(t, stream.NewMachine(nil), &sliceEvents{evs: evs})
		if err != nil {
			require.ErrorIs(t, err, fault.ErrUpstream)
		}
		checkFuzzEvents(t, evs, out, err)

		chunked := parseChunked(t, renderChunked("f", out, clientError(t, err)))
		checkFuzzChunked(t, out, err, chunked)
	})
}

func checkFuzzEvents(t *testing.T, in []bedrock.StreamEvent, out []chat.Event, streamErr error) {
	t.Helper()
	// What Bedrock sent per tool block, in block-start order; a reference model of the
	// blocks the machine accepted.
	type ref struct {
		block int
		input strings.Builder
	}
	var blocks []*ref
	sawStop, sawMeta := false, false
	for _, ev := range in {
		if sawStop && sawMeta {
			break // complete: the machine ignores the rest
		}
		switch {
		case ev.ContentBlockStart != nil && ev.ContentBlockStart.Start.ToolUse != nil:
			blocks = append(blocks, &ref{block: ev.ContentBlockStart.ContentBlockIndex})
		case ev.ContentBlockDelta != nil && ev.ContentBlockDelta.Delta.ToolUse != nil:
			for _, b := range blocks {
				if b.block == ev.ContentBlockDelta.ContentBlockIndex {
					b.input.WriteString(ev.ContentBlockDelta.Delta.ToolUse.Input)
				}
			}
		case ev.MessageStop != nil:
			sawStop = true
		case ev.Metadata != nil:
			sawMeta = true
		}
	}

	var args []string
	ended := map[int]bool{}
	doneAt := -1
	for i, e := range out {
		require.Equal(t, -1, doneAt, "event after done: %v", e)
		switch e.Kind {
		case chat.EventContent, chat.EventReasoning:
			require.NotEmpty(t, e.Text)
		case chat.EventReasoningBlock:
			require.Equal(t, "hmm", e.Block.Text[:min(3, len(e.Block.Text))], "the block holds its deltas' text")
		case chat.EventToolCall:
			tc := e.ToolCall
			idx := e.Index
			if tc.ID != "" {
				require.Equal(t, len(args), idx, "headers must come in index order 0, 1, 2 …")
				require.Equal(t, "function", tc.Type)
				require.Empty(t, tc.Arguments, "a header has no arguments")
				require.Equal(t, "tool_"+strconv.Itoa(blocks[idx].block), tc.Name)
				args = append(args, "")
				continue
			}
			require.GreaterOrEqual(t, idx, 0)
			require.Less(t, idx, len(args), "fragment before its header")
			require.False(t, ended[idx], "fragment after the end marker")
			require.NotEmpty(t, tc.Arguments)
			args[idx] += tc.Arguments
		case chat.EventToolCallEnd:
			require.Less(t, e.Index, len(args))
			require.False(t, ended[e.Index], "two end markers")
			ended[e.Index] = true
		case chat.EventDone:
			doneAt = i
		default:
			t.Fatalf("unexpected event kind %d", e.Kind)
		}
	}
	if streamErr != nil {
		require.Equal(t, -1, doneAt, "done and an error")
		if errors.Is(streamErr, stream.ErrTruncated) {
			require.False(t, sawStop, "ErrTruncated although messageStop came")
		}
		return
	}
	require.Equal(t, len(out)-1, doneAt, "a complete stream ends with done")
	require.Len(t, ended, len(args), "every call ends before done")
	require.LessOrEqual(t, len(args), len(blocks))
	for i := range args {
		want := blocks[i].input.String()
		if want == "" {
			want = "{}"
		}
		require.Equal(t, want, args[i], "arguments of index %d", i)
		if json.Valid([]byte(blocks[i].input.String())) {
			require.True(t, json.Valid([]byte(args[i])))
		}
	}
}

func checkFuzzChunked(t *testing.T, evs []chat.Event, streamErr error, lines []chunkLine) {
	t.Helper()
	calls := map[string]string{} // id → complete arguments
	for _, e := range evs {
		if e.Kind != chat.EventToolCall {
			continue
		}
		if id := e.ToolCall.ID; id != "" {
			calls[id] = ""
			continue
		}
		for _, h := range evs {
			if h.Kind == chat.EventToolCall && h.Index == e.Index && h.ToolCall.ID != "" {
				calls[h.ToolCall.ID] += e.ToolCall.Arguments
				break
			}
		}
	}
	seen := map[string]bool{}
	starts := map[string]bool{}
	for i, l := range lines {
		require.Equal(t, "f-"+strconv.Itoa(i+1), l.ID)
		require.False(t, seen[l.ID])
		seen[l.ID] = true
		switch l.Type {
		case nirmata.ChunkText, nirmata.ChunkReasoning, nirmata.ChunkReasoningBlock:
		case nirmata.ChunkToolStart:
			id, _, args := toolStartCall(t, l.Data)
			require.False(t, starts[id], "two ToolStarts for %s", id)
			starts[id] = true
			require.Equal(t, calls[id], args)
		case nirmata.ChunkError, nirmata.ChunkDone:
			require.Equal(t, len(lines)-1, i, "%s must be last", l.Type)
			require.Equal(t, streamErr == nil, l.Type == nirmata.ChunkDone)
		default:
			t.Fatalf("unexpected chunked type %q", l.Type)
		}
	}
	if streamErr == nil {
		require.Len(t, starts, len(calls))
	}
}

func ptr[T any](v T) *T { return &v }
