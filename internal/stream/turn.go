package stream

import (
	"cmp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/bedrock"
)

// Recorder passes a stream's events through and keeps the assistant message they make, as
// Converse would have returned it: a repair attempt (docs/PROTOCOL.md 13.2) sends the
// model's own turn back verbatim, reasoning blocks with their signatures included. Blocks
// are kept by contentBlockIndex, in its order. Not safe for concurrent use.
type Recorder struct {
	src    Events
	blocks []*recorded // a strings.Builder may not be copied once used
}

// recorded is one content block as its events built it.
type recorded struct {
	index int
	text  *strings.Builder // a text block
	// A toolUse block: its start, and its input fragments.
	tool  *bedrock.ToolUseBlock
	input strings.Builder
	// A reasoning block: its text and signature, or its redacted content.
	reasoning          bool
	thought, signature strings.Builder
	redacted           strings.Builder
}

// NewRecorder returns a Recorder reading src.
func NewRecorder(src Events) *Recorder { return &Recorder{src: src} }

// Next implements [Events].
func (r *Recorder) Next() (bedrock.StreamEvent, error) {
	ev, err := r.src.Next()
	if err == nil {
		r.record(ev)
	}
	return ev, err
}

func (r *Recorder) block(index int) *recorded {
	for i := len(r.blocks) - 1; i >= 0; i-- {
		if r.blocks[i].index == index {
			return r.blocks[i]
		}
	}
	b := &recorded{index: index}
	r.blocks = append(r.blocks, b)
	return b
}

func (r *Recorder) record(ev bedrock.StreamEvent) {
	switch {
	case ev.ContentBlockStart != nil && ev.ContentBlockStart.Start.ToolUse != nil:
		s := ev.ContentBlockStart
		b := r.block(s.ContentBlockIndex)
		b.tool = &bedrock.ToolUseBlock{ToolUseID: s.Start.ToolUse.ToolUseID, Name: s.Start.ToolUse.Name}
	case ev.ContentBlockDelta != nil:
		d := ev.ContentBlockDelta
		b := r.block(d.ContentBlockIndex)
		switch {
		case d.Delta.Text != nil:
			if b.text == nil {
				b.text = &strings.Builder{}
			}
			b.text.WriteString(*d.Delta.Text)
		case d.Delta.ToolUse != nil:
			b.input.WriteString(d.Delta.ToolUse.Input)
		case d.Delta.ReasoningContent != nil:
			rc := d.Delta.ReasoningContent
			b.reasoning = true
			switch {
			case rc.Text != nil:
				b.thought.WriteString(*rc.Text)
			case rc.Signature != nil:
				b.signature.WriteString(*rc.Signature)
			case rc.RedactedContent != nil:
				b.redacted.WriteString(*rc.RedactedContent)
			}
		}
	}
}

// Turn is the assistant message the events so far make: its blocks in contentBlockIndex
// order, a tool call without input given {}.
func (r *Recorder) Turn() bedrock.Message {
	blocks := slices.SortedStableFunc(slices.Values(r.blocks), func(a, b *recorded) int { return cmp.Compare(a.index, b.index) })
	out := bedrock.Message{Role: bedrock.RoleAssistant, Content: make([]bedrock.ContentBlock, 0, len(blocks))}
	for _, b := range blocks {
		switch {
		case b.tool != nil:
			tu := *b.tool
			tu.Input = jsontext.Value(b.input.String())
			if len(tu.Input) == 0 {
				tu.Input = jsontext.Value("{}")
			}
			out.Content = append(out.Content, bedrock.ContentBlock{ToolUse: &tu})
		case b.reasoning:
			rc := &bedrock.ReasoningContentBlock{}
			if b.redacted.Len() > 0 {
				rc.RedactedContent = b.redacted.String()
			} else {
				rc.ReasoningText = &bedrock.ReasoningText{Text: b.thought.String(), Signature: b.signature.String()}
			}
			out.Content = append(out.Content, bedrock.ContentBlock{ReasoningContent: rc})
		case b.text != nil:
			text := b.text.String()
			out.Content = append(out.Content, bedrock.ContentBlock{Text: &text})
		}
	}
	return out
}
