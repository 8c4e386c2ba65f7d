// Package report is make demo's arithmetic and text: the price table, what a loop's tokens
// cost, percentages that add up to 100, and the headline and tables the demo prints. The
// demo runs the loops with the official openai-go client; this package does not import it,
// so that its tests build without it.
package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// Price is what a model's tokens cost, in millionths of a dollar per million tokens, so
// that a token costs that many picodollars and the arithmetic stays in integers.
type Price struct {
	// Name is the model as people call it; ModelID is the Bedrock model id the demo asks for.
	Name, ModelID string
	// Input is the price of input tokens at full price, Output that of output tokens
	// (thinking included).
	Input, Output int64
}

// CacheWrite is the price of input tokens written to the prompt cache: 1.25 times Input.
func (p Price) CacheWrite() int64 { return p.Input * 5 / 4 }

// CacheRead is the price of input tokens read from the prompt cache: 0.1 times Input.
func (p Price) CacheRead() int64 { return p.Input / 10 }

// Cost is what u costs at p.
func (p Price) Cost(u Usage) Money {
	return Money(u.Full*p.Input + u.CacheRead*p.CacheRead() + u.CacheWrite*p.CacheWrite() + u.Output*p.Output)
}

// Sonnet4 is the demo's price table: Claude Sonnet 4, the gateway's default model. The
// prices are Anthropic's (source below); AWS's Bedrock pricing page could not be read where
// this table was written.
var Sonnet4 = Price{
	Name:    "Claude Sonnet 4",
	ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0",
	Input:   3_000_000,
	Output:  15_000_000,
}

// priceSource says where Sonnet4's numbers come from, when, and what they are not.
const priceSource = `These are Anthropic's published prices for Claude Sonnet 4
(platform.claude.com/docs/en/about-claude/pricing, read 2026-11-29), with the cache
multipliers Bedrock applies to Claude: a cache write costs 1.25 times the input price, a
cache read 0.1 times. They are not AWS's quote: AWS's Bedrock pricing page
(aws.amazon.com/bedrock/pricing), which gives the on-demand price per region (us-east-1, for
one), could not be reached from where this table was written; check it before you budget.
The token counts are the simulator's (about four bytes a token): the costs show proportions,
not a bill.`

// Money is an amount in US dollars, in picodollars (10^-12 dollars).
type Money int64

// String is m in dollars to four decimal places, rounded half up: $0.0339.
func (m Money) String() string {
	c := (int64(m) + 5e7) / 1e8 // ten-thousandths of a dollar
	return fmt.Sprintf("$%d.%04d", c/10_000, c%10_000)
}

// Usage is a call's tokens, each kind at its own price.
type Usage struct {
	// Full is the input tokens at full price, CacheRead those read from the prompt cache,
	// CacheWrite those written to it; Output the output tokens, thinking included.
	Full, CacheRead, CacheWrite, Output int64
}

// Input is all of u's input tokens.
func (u Usage) Input() int64 { return u.Full + u.CacheRead + u.CacheWrite }

func (u Usage) plus(v Usage) Usage {
	return Usage{u.Full + v.Full, u.CacheRead + v.CacheRead, u.CacheWrite + v.CacheWrite, u.Output + v.Output}
}

// Turn is one call to the model in the agent's loop.
type Turn struct {
	// Tool is the tool the model called; empty for its final answer.
	Tool  string
	Usage Usage
	// Thinking is the gateway's x-gateway-thinking header: a chat.Thinking* outcome, or empty
	// when the gateway did nothing to thinking.
	Thinking string
}

// Run is one run of the loop to the model's final answer.
type Run struct {
	// Thinking says whether the agent asked for extended thinking.
	Thinking bool
	Turns    []Turn
}

func (r Run) total() Usage {
	var t Usage
	for _, turn := range r.Turns {
		t = t.plus(turn.Usage)
	}
	return t
}

// thoughtOn is how many of r's turns the model thought on: all that asked, except those
// the gateway had to send without thinking.
func (r Run) thoughtOn() int {
	if !r.Thinking {
		return 0
	}
	n := 0
	for _, t := range r.Turns {
		if !strings.HasPrefix(t.Thinking, "disabled-") {
			n++
		}
	}
	return n
}

// Runs are the demo's four runs of the same loop.
type Runs struct {
	// CachingOff runs with the gateway's prompt caching off, CachingOn with its default.
	CachingOff, CachingOn Run
	// ThinkingKept and ThinkingLost ask for thinking through a client that drops the
	// thinking blocks: the gateway puts them back in ThinkingKept; in ThinkingLost it has
	// no copy (its reasoning cache off), so it sends those turns without thinking.
	ThinkingKept, ThinkingLost Run
}

// shares divides 100.0% among parts in proportion, in tenths of a percent, by the largest
// remainder method: each part gets its share rounded down, and the tenths left over go to
// the parts with the largest remainders (the first on a tie), so the shares add up to
// exactly 1000. They are all zero when the parts are.
func shares(parts ...int64) []int64 {
	var total int64
	for _, p := range parts {
		total += p
	}
	out := make([]int64, len(parts))
	if total == 0 {
		return out
	}
	rems := make([]int64, len(parts))
	left := int64(1000)
	for i, p := range parts {
		out[i], rems[i] = p*1000/total, p*1000%total
		left -= out[i]
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rems {
			if rems[i] > rems[best] {
				best = i
			}
		}
		out[best]++
		rems[best] = -1
	}
	return out
}

// percent is tenths of a percent written as a percentage with one decimal: 87.5%.
func percent(tenths int64) string { return fmt.Sprintf("%d.%d%%", tenths/10, tenths%10) }

// ratio is part/whole in tenths of a percent, rounded half up; whole is not zero.
func ratio(part, whole Money) int64 { return (2000*int64(part) + int64(whole)) / (2 * int64(whole)) }

// count is n with its thousands separated by commas: 49,110.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// thinkingLabel says in words what happened to thinking on a turn of a run that asked for
// it, given the gateway's x-gateway-thinking header.
func thinkingLabel(header string) string {
	switch header {
	case "":
		return "on"
	case chat.ThinkingRestored:
		return "on, blocks put back"
	case chat.ThinkingMissingSignature:
		return "off, blocks lost"
	}
	return header
}

// Write prints the demo's report on r at price p: the headline (what each run costs and
// what prompt caching saves and losing thinking costs), the price table and its source,
// then each run turn by turn.
func Write(w io.Writer, p Price, r Runs) error {
	var b strings.Builder
	headline(&b, p, r)
	fmt.Fprintf(&b, "\nPrices, in dollars per million tokens: input %s, output %s, cache write %s, cache read %s.\n%s\n",
		perMillion(p.Input), perMillion(p.Output), perMillion(p.CacheWrite()), perMillion(p.CacheRead()), priceSource)
	for _, s := range []struct {
		title, note string
		run         Run
	}{
		{"1. Prompt caching off", "", r.CachingOff},
		{"2. Prompt caching on (the gateway's default)", noteCachingOn, r.CachingOn},
		{"3. Thinking on, through a client that drops the thinking blocks; the gateway puts them back", noteKept, r.ThinkingKept},
		{"4. As 3, but the gateway has no copy of the blocks (its reasoning cache off)", noteLost, r.ThinkingLost},
	} {
		fmt.Fprintf(&b, "\n%s\n\n", s.title)
		turns(&b, p, s.run)
		if s.note != "" {
			fmt.Fprintf(&b, "\n%s\n", s.note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const (
	noteCachingOn = `The gateway marks the tools, the system prompt and the end of the history as cacheable:
the first call writes them to the cache, each later call reads them back and writes only
what the previous turn added.`
	noteKept = `The client sends each answer back without its thinking blocks (the official openai-go
client's ToParam() keeps only the text and the tool calls). Bedrock refuses a tool turn that
asks for thinking without them, so the gateway puts back the copies it kept, and the model
thinks on every turn.`
	noteLost = `From turn 2 the gateway has no copy to put back, so rather than send a turn Bedrock would
refuse, it sends it without thinking: the model thinks on the first turn only.`
)

// headline is what each run costs, what prompt caching saves and what losing thinking
// costs, in dollars at p.
func headline(b *strings.Builder, p Price, r Runs) {
	fmt.Fprintf(b, "An agent's ten-step tool loop on %s (%s):\none tool call per turn, %d calls to the model, through the gateway's OpenAI API on its simulator.\n\n",
		p.Name, p.ModelID, len(r.CachingOff.Turns))
	rows := []struct {
		name string
		run  Run
	}{
		{"1. prompt caching off", r.CachingOff},
		{"2. prompt caching on", r.CachingOn},
		{"3. caching on, thinking kept", r.ThinkingKept},
		{"4. caching on, thinking lost", r.ThinkingLost},
	}
	width := 0
	for _, row := range rows {
		width = max(width, len(row.name))
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%*s\tcost\tinput tokens\toutput tokens\tthinking on\t\n", width, "")
	for _, row := range rows {
		t := row.run.total()
		thinking := "not asked"
		if row.run.Thinking {
			thinking = fmt.Sprintf("%d of %d turns", row.run.thoughtOn(), len(row.run.Turns))
		}
		// Padded, the names line up on the left although the table aligns right.
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t\n", width, row.name, p.Cost(t), count(t.Input()), count(t.Output), thinking)
	}
	_ = tw.Flush() // a strings.Builder does not fail

	off, on := p.Cost(r.CachingOff.total()), p.Cost(r.CachingOn.total())
	fmt.Fprintf(b, "\nPrompt caching (2 against 1): %s instead of %s a loop, %s less.\n", on, off, percent(ratio(off-on, off)))
	kept, lost := p.Cost(r.ThinkingKept.total()), p.Cost(r.ThinkingLost.total())
	fmt.Fprintf(b, "Losing thinking (4 against 3): the client drops the thinking blocks (openai-go does) and\n"+
		"the gateway has no copy to put back, so the model thinks on %d of %d turns instead of %d.\n"+
		"That saves %s a loop, %s of 3's cost (the thinking, billed as output, and the blocks\n"+
		"sent back as input), and loses the model's reasoning on the other %d turns.\n",
		r.ThinkingLost.thoughtOn(), len(r.ThinkingLost.Turns), r.ThinkingKept.thoughtOn(),
		kept-lost, percent(ratio(kept-lost, kept)), len(r.ThinkingLost.Turns)-r.ThinkingLost.thoughtOn())
}

// perMillion is a Price field in dollars: $3.75.
func perMillion(micro int64) string { return fmt.Sprintf("$%d.%02d", micro/1e6, micro%1e6/1e4) }

// turns is run's table: each turn's tokens and cost, the totals, and each kind's share of
// the input tokens.
func turns(b *strings.Builder, p Price, run Run) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	thinking := func(s string) string {
		if run.Thinking {
			return s + "\t"
		}
		return ""
	}
	fmt.Fprintf(tw, "turn\ttool called\tinput, full price\tread from cache\twritten to cache\toutput\tcost\t%s\n", thinking("thinking"))
	for i, t := range run.Turns {
		tool := t.Tool
		if tool == "" {
			tool = "(answer)"
		}
		u := t.Usage
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, tool,
			count(u.Full), count(u.CacheRead), count(u.CacheWrite), count(u.Output), p.Cost(u), thinking(thinkingLabel(t.Thinking)))
	}
	t := run.total()
	fmt.Fprintf(tw, "total\t\t%s\t%s\t%s\t%s\t%s\t%s\n",
		count(t.Full), count(t.CacheRead), count(t.CacheWrite), count(t.Output), p.Cost(t), thinking(""))
	s := shares(t.Full, t.CacheRead, t.CacheWrite)
	fmt.Fprintf(tw, "\tshare of input\t%s\t%s\t%s\t\t\t%s\n", percent(s[0]), percent(s[1]), percent(s[2]), thinking(""))
	_ = tw.Flush()
}
