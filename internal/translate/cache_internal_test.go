package translate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// A request in shorthand, one string per list (tools, system, each message), blocks
// separated by spaces: s a tool spec, t short text, T text of 5,000 bytes, r a reasoning
// block, pdf and csv documents, i an image, u a toolUse; P a client point, P1h one asking
// for 1h; A an automatic point, A1h one with 1h. Client points are named h0, h1, … in the
// order they are written: tools, system, messages.
type shorthand struct {
	tools, system string
	messages      []string
}

// build makes the request, each client point made by the namer as a hint would be.
func (s shorthand) build(n *namer) (*bedrock.ConverseRequest, map[*bedrock.CachePoint]bool) {
	client := map[*bedrock.CachePoint]bool{}
	k := 0
	point := func(tok string) *bedrock.CachePoint {
		cc := &chat.CacheControl{Type: hintEphemeral}
		if tok == "P1h" {
			cc.TTL = ttl1h
		}
		cp := n.point(cc, messageHint(k)).CachePoint // named h<k> by shortPaths
		k++
		client[cp] = true
		return cp
	}
	out := &bedrock.ConverseRequest{}
	if s.tools != "" {
		out.ToolConfig = &bedrock.ToolConfig{}
		for _, tok := range strings.Fields(s.tools) {
			if strings.HasPrefix(tok, "P") {
				out.ToolConfig.Tools = append(out.ToolConfig.Tools, bedrock.Tool{CachePoint: point(tok)})
				continue
			}
			out.ToolConfig.Tools = append(out.ToolConfig.Tools, bedrock.Tool{ToolSpec: &bedrock.ToolSpec{Name: "x", InputSchema: bedrock.InputSchema{JSON: []byte(`{"type":"object"}`)}}})
		}
	}
	for _, tok := range strings.Fields(s.system) {
		switch {
		case strings.HasPrefix(tok, "P"):
			out.System = append(out.System, bedrock.SystemBlock{CachePoint: point(tok)})
		case tok == "T":
			out.System = append(out.System, bedrock.SystemBlock{Text: strings.Repeat("x", 5000)})
		default:
			out.System = append(out.System, bedrock.SystemBlock{Text: "system"})
		}
	}
	for i, m := range s.messages {
		msg := bedrock.Message{Role: bedrock.RoleUser}
		if i%2 == 1 {
			msg.Role = bedrock.RoleAssistant
		}
		for _, tok := range strings.Fields(m) {
			var b bedrock.ContentBlock
			switch tok {
			case "t":
				b = bedrock.TextBlock("hello")
			case "T":
				b = bedrock.TextBlock(strings.Repeat("x", 5000))
			case "r":
				b.ReasoningContent = &bedrock.ReasoningContentBlock{ReasoningText: &bedrock.ReasoningText{Text: "hm", Signature: "sig"}}
			case "pdf", "csv":
				b.Document = &bedrock.DocumentBlock{Format: tok, Name: "doc", Source: bedrock.DocumentSource{Bytes: []byte("%PDF")}}
			case "i":
				b.Image = &bedrock.ImageBlock{Format: "png", Source: bedrock.ImageSource{Bytes: []byte{1}}}
			case "u":
				b.ToolUse = &bedrock.ToolUseBlock{ToolUseID: "id", Name: "x", Input: []byte(`{}`)}
			default:
				b.CachePoint = point(tok)
			}
			msg.Content = append(msg.Content, b)
		}
		out.Messages = append(out.Messages, msg)
	}
	return out, client
}

// render writes a request back in shorthand.
func render(out *bedrock.ConverseRequest, client map[*bedrock.CachePoint]bool) shorthand {
	point := func(cp *bedrock.CachePoint) string {
		s := "A"
		if client[cp] {
			s = "P"
		}
		return s + cp.TTL
	}
	var s shorthand
	var toks []string
	if cfg := out.ToolConfig; cfg != nil {
		for _, t := range cfg.Tools {
			if t.CachePoint != nil {
				toks = append(toks, point(t.CachePoint))
			} else {
				toks = append(toks, "s")
			}
		}
	}
	s.tools, toks = strings.Join(toks, " "), nil
	for _, b := range out.System {
		switch {
		case b.CachePoint != nil:
			toks = append(toks, point(b.CachePoint))
		case len(b.Text) > 1000:
			toks = append(toks, "T")
		default:
			toks = append(toks, "t")
		}
	}
	s.system = strings.Join(toks, " ")
	for _, m := range out.Messages {
		toks = nil
		for _, b := range m.Content {
			switch {
			case b.CachePoint != nil:
				toks = append(toks, point(b.CachePoint))
			case b.Text != nil && len(*b.Text) > 1000:
				toks = append(toks, "T")
			case b.Text != nil:
				toks = append(toks, "t")
			case b.ReasoningContent != nil:
				toks = append(toks, "r")
			case b.Document != nil:
				toks = append(toks, b.Document.Format)
			case b.Image != nil:
				toks = append(toks, "i")
			case b.ToolUse != nil:
				toks = append(toks, "u")
			}
		}
		s.messages = append(s.messages, strings.Join(toks, " "))
	}
	return s
}

// shortPaths writes the paths of shorthand's client points as their names: h0 for
// messages[0].cache_control.
func shortPaths(paths []string) []string {
	if paths == nil {
		return nil
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		p = strings.Replace(p, "messages[", "h", 1)
		out[i] = strings.Replace(p, "].cache_control", "", 1)
	}
	return out
}

// TestPromptCacheRules: 12.1's rules, in order, and the automatic points of 12.2, on
// requests built by hand (reasoning blocks included, which Request does not send back
// yet).
func TestPromptCacheRules(t *testing.T) {
	t.Parallel()
	const (
		sonnet4  = "us.anthropic.claude-sonnet-4-20250514-v1:0"   // 1,024 tokens, 5m only
		sonnet45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0" // 1,024 tokens, 1h
		nova     = "us.amazon.nova-pro-v1:0"                      // 1,024 tokens, no tools point
		llama    = "meta.llama3-1-70b-instruct-v1:0"              // no caching
		haiku45  = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  // 4,096 tokens, 1h
		claude3  = "anthropic.claude-3-sonnet-20240229-v1:0"      // no caching
		sonnet46 = "global.anthropic.claude-sonnet-4-6"           // 2,048 tokens, 1h
		novaLite = "amazon.nova-lite-v1:0"                        // 1,536 tokens
	)
	tests := []struct {
		name      string
		model     string
		opts      Options
		retention string
		in, want  shorthand
		ignored   []string
		stats     CacheStats
	}{
		{
			name: "points where they stand are kept", model: sonnet4,
			in:    shorthand{tools: "s P s", system: "t P", messages: []string{"t P t"}},
			want:  shorthand{tools: "s P s", system: "t P", messages: []string{"t P t"}},
			stats: CacheStats{Hints: 3, Sent: 3},
		},
		{
			name: "rule 1: nothing before, after reasoning, after a non-PDF document", model: sonnet4,
			in:      shorthand{system: "P t", messages: []string{"P t csv P pdf P", "r P t P"}},
			want:    shorthand{system: "t", messages: []string{"t csv pdf P", "r t P"}},
			ignored: []string{"h0", "h1", "h2", "h4"},
			stats:   CacheStats{Hints: 6, Misplaced: 4, Sent: 2},
		},
		{
			name: "rule 1: a point right after a point becomes one with it, with the longer TTL", model: sonnet45,
			in:    shorthand{messages: []string{"t P P1h P t"}},
			want:  shorthand{messages: []string{"t P1h t"}},
			stats: CacheStats{Hints: 3, Merged: 2, Sent: 1},
		},
		{
			name: "rule 1: a point after a dropped one has nothing before it either", model: sonnet4,
			in:      shorthand{messages: []string{"P P t"}},
			want:    shorthand{messages: []string{"t"}},
			ignored: []string{"h0", "h1"},
			stats:   CacheStats{Hints: 2, Misplaced: 2},
		},
		{
			name: "rule 2: no caching, every point goes", model: llama,
			in:      shorthand{tools: "s P", system: "t P", messages: []string{"T P"}},
			want:    shorthand{tools: "s", system: "t", messages: []string{"T"}},
			ignored: []string{"h0", "h1", "h2"},
			stats:   CacheStats{Hints: 3, Unsupported: 3},
		},
		{
			name: "rule 2: Claude 3 has no caching", model: claude3,
			in:      shorthand{messages: []string{"t P"}},
			want:    shorthand{messages: []string{"t"}},
			ignored: []string{"h0"},
			stats:   CacheStats{Hints: 1, Unsupported: 1},
		},
		{
			name: "rule 2: Nova takes no point in the tools", model: nova,
			in:      shorthand{tools: "s P s P1h", system: "t P", messages: []string{"t"}},
			want:    shorthand{tools: "s s", system: "t P", messages: []string{"t"}},
			ignored: []string{"h0", "h1"},
			stats:   CacheStats{Hints: 3, Unsupported: 2, Sent: 1},
		},
		{
			name: "rule 2: 1h becomes the default where the model lacks it", model: sonnet4,
			in:      shorthand{system: "t P1h", messages: []string{"t"}},
			want:    shorthand{system: "t P", messages: []string{"t"}},
			ignored: []string{"h0.ttl"},
			stats:   CacheStats{Hints: 1, Downgraded: 1, Sent: 1},
		},
		{
			name: "rule 3: 1h after 5m becomes 5m, along tools, system, messages", model: sonnet45,
			in:      shorthand{tools: "s P1h", system: "t P", messages: []string{"t P1h", "t P1h"}},
			want:    shorthand{tools: "s P1h", system: "t P", messages: []string{"t P", "t P"}},
			ignored: []string{"h2.ttl", "h3.ttl"},
			stats:   CacheStats{Hints: 4, Downgraded: 2, Sent: 4},
		},
		{
			name: "rule 4: the last tools, last system and last two message points first", model: sonnet4,
			in:      shorthand{tools: "s P s P", system: "t P t P", messages: []string{"t P", "t P", "t P"}},
			want:    shorthand{tools: "s s P", system: "t t P", messages: []string{"t", "t P", "t P"}},
			ignored: []string{"h0", "h2", "h4"},
			stats:   CacheStats{Hints: 7, OverLimit: 3, Sent: 4},
		},
		{
			name: "rule 4: places left go to the other points, latest first", model: sonnet4,
			in:      shorthand{messages: []string{"t P t P", "t P", "t P t P"}},
			want:    shorthand{messages: []string{"t t P", "t P", "t P t P"}},
			ignored: []string{"h0"},
			stats:   CacheStats{Hints: 5, OverLimit: 1, Sent: 4},
		},
		{
			name: "rule 4: places left after the preferred ones", model: sonnet4,
			in:      shorthand{system: "t P t P t P t P", messages: []string{"t P"}},
			want:    shorthand{system: "t t P t P t P", messages: []string{"t P"}},
			ignored: []string{"h0"},
			stats:   CacheStats{Hints: 5, OverLimit: 1, Sent: 4},
		},
		{
			name: "automatic: after tools, system and the last message, once above the minimum", model: sonnet4,
			in:    shorthand{tools: "s", system: "T", messages: []string{"t", "t", "t"}},
			want:  shorthand{tools: "s", system: "T A", messages: []string{"t", "t", "t A"}},
			stats: CacheStats{Auto: 2, Sent: 2},
		},
		{
			name: "automatic: not where a client point stands", model: sonnet4,
			in:    shorthand{tools: "s", system: "T P", messages: []string{"t P"}},
			want:  shorthand{tools: "s", system: "T P", messages: []string{"t P"}},
			stats: CacheStats{Hints: 2, Sent: 2},
		},
		{
			name: "automatic: off", model: sonnet4, opts: Options{NoAutoCache: true},
			in:   shorthand{system: "T", messages: []string{"T"}},
			want: shorthand{system: "T", messages: []string{"T"}},
		},
		{
			name: "automatic: none on a model without caching", model: llama,
			in:   shorthand{system: "T", messages: []string{"T"}},
			want: shorthand{system: "T", messages: []string{"T"}},
		},
		{
			name: "automatic: Nova gets none in the tools", model: nova,
			in:    shorthand{tools: "s", system: "T", messages: []string{"t"}},
			want:  shorthand{tools: "s", system: "T A", messages: []string{"t A"}},
			stats: CacheStats{Auto: 2, Sent: 2},
		},
		{
			name: "automatic: the minimum counts everything before the point", model: haiku45, // 4,096 tokens: 16,384 bytes
			in:    shorthand{system: "T", messages: []string{"T", "T", "T"}},
			want:  shorthand{system: "T", messages: []string{"T", "T", "T A"}},
			stats: CacheStats{Auto: 1, Sent: 1},
		},
		{
			name: "automatic: dropped before client points beyond four", model: sonnet4,
			in:      shorthand{tools: "s", system: "T P", messages: []string{"t P", "t P", "t P", "t"}},
			want:    shorthand{tools: "s", system: "T P", messages: []string{"t P", "t P", "t P", "t"}},
			ignored: nil,
			stats:   CacheStats{Hints: 4, Auto: 1, OverLimit: 1, Sent: 4},
		},
		{
			name: "automatic: after a reasoning block it goes", model: sonnet4,
			in:    shorthand{system: "T", messages: []string{"t", "t r"}},
			want:  shorthand{system: "T A", messages: []string{"t", "t r"}},
			stats: CacheStats{Auto: 2, Misplaced: 1, Sent: 1},
		},
		{
			name: "automatic: 1h with prompt_cache_retention 24h on a model that has it", model: sonnet45, retention: "24h",
			in:    shorthand{system: "T", messages: []string{"t"}},
			want:  shorthand{system: "T A1h", messages: []string{"t A1h"}},
			stats: CacheStats{Auto: 2, Sent: 2},
		},
		{
			name: "automatic: prompt_cache_retention 24h listed where the model lacks 1h", model: sonnet4, retention: "24h",
			in:      shorthand{system: "T", messages: []string{"t"}},
			want:    shorthand{system: "T A", messages: []string{"t A"}},
			ignored: []string{"prompt_cache_retention"},
			stats:   CacheStats{Auto: 2, Sent: 2},
		},
		{
			name: "automatic: prompt_cache_retention 24h listed with automatic caching off", model: sonnet45, retention: "24h", opts: Options{NoAutoCache: true},
			in:      shorthand{system: "T", messages: []string{"t"}},
			want:    shorthand{system: "T", messages: []string{"t"}},
			ignored: []string{"prompt_cache_retention"},
		},
		{
			name: "automatic: 1h before a later client point asking for 1h", model: sonnet45,
			in:    shorthand{tools: "s", system: "T", messages: []string{"t P1h", "t"}},
			want:  shorthand{tools: "s", system: "T A1h", messages: []string{"t P1h", "t A"}},
			stats: CacheStats{Hints: 1, Auto: 2, Sent: 3},
		},
		{
			name: "automatic: per family minimum, Nova Lite 1,536 tokens", model: novaLite,
			in:   shorthand{system: "T", messages: []string{"t"}}, // 5,000 bytes < 6,144
			want: shorthand{system: "T", messages: []string{"t"}},
		},
		{
			name: "automatic: per family minimum, Sonnet 4.6 2,048 tokens", model: sonnet46,
			in:    shorthand{system: "T", messages: []string{"T"}}, // 10,000 bytes ≥ 8,192
			want:  shorthand{system: "T", messages: []string{"T A"}},
			stats: CacheStats{Auto: 1, Sent: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := &namer{names: &Plan{}}
			out, client := tt.in.build(n)
			promptCache(out, &chat.Request{CacheRetention: tt.retention}, capabilities.Lookup(tt.model), tt.opts, n)
			if diff := cmp.Diff(tt.want, render(out, client), cmp.AllowUnexported(shorthand{})); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			assert.Equal(t, tt.ignored, shortPaths(n.names.Ignored))
			assert.Equal(t, tt.stats, n.names.Stats.Cache)
		})
	}
}

// CheckCachePoints checks the cache points of a request as docs/BEDROCK.md H says Bedrock
// does, written from the rules rather than from promptCache: at most four; none with
// nothing before it in its list, right after another point, a reasoning block or a
// non-PDF document; none on a model without caching, none in the tools of a model that
// refuses them there; ttl empty, "5m" or "1h", "1h" only where the model has it, and never
// after a shorter one along tools, system, messages. The request tests of package
// translate_test check it on every request Request emits.
func CheckCachePoints(r *bedrock.ConverseRequest, model capabilities.Model) error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	n, short := 0, false
	point := func(where string, cp *bedrock.CachePoint, prev *bedrock.ContentBlock, first bool) {
		n++
		switch {
		case cp.Type != "default":
			fail("%s: type %q", where, cp.Type)
		case cp.TTL != "" && cp.TTL != "5m" && cp.TTL != "1h":
			fail("%s: ttl %q", where, cp.TTL)
		case cp.TTL == "1h" && !model.Cache1h:
			fail("%s: ttl 1h on a model without it", where)
		case cp.TTL == "1h" && short:
			fail("rule 3: %s: 1h after a shorter ttl", where)
		}
		short = short || cp.TTL != "1h"
		switch {
		case first:
			fail("rule 4: %s: nothing before it", where)
		case prev.CachePoint != nil:
			fail("%s: right after another point", where)
		case prev.ReasoningContent != nil:
			fail("rule 4: %s: after a reasoning block", where)
		case prev.Document != nil && prev.Document.Format != "pdf":
			fail("rule 4: %s: after a %s document", where, prev.Document.Format)
		}
	}
	if cfg := r.ToolConfig; cfg != nil {
		for i, t := range cfg.Tools {
			if t.CachePoint == nil {
				continue
			}
			where := fmt.Sprintf("toolConfig.tools.%d", i)
			if model.NoToolCachePoint {
				fail("%s: a point in the tools of %s", where, model.ID)
			}
			var prev bedrock.ContentBlock
			if i > 0 {
				prev.CachePoint = cfg.Tools[i-1].CachePoint
			}
			point(where, t.CachePoint, &prev, i == 0)
		}
	}
	for i, s := range r.System {
		if s.CachePoint == nil {
			continue
		}
		var prev bedrock.ContentBlock
		if i > 0 {
			prev.CachePoint = r.System[i-1].CachePoint
		}
		point(fmt.Sprintf("system.%d", i), s.CachePoint, &prev, i == 0)
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.CachePoint == nil {
				continue
			}
			var prev *bedrock.ContentBlock
			if j > 0 {
				prev = &m.Content[j-1]
			}
			point(fmt.Sprintf("messages.%d.content.%d", i, j), b.CachePoint, prev, j == 0)
		}
	}
	if n > 0 && model.CacheMinTokens == 0 {
		fail("%d points on %s, which has no prompt caching", n, model.ID)
	}
	if n > 4 {
		fail("rule 2: %d points", n)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// CheckSectionSizes checks that the brackets the automatic estimate starts from hold each
// section's JSON length, as reaches relies on.
func CheckSectionSizes(r *bedrock.ConverseRequest) error {
	var errs []error
	for sec, name := range []string{"tools", "system", "messages"} {
		lower, bounded := sizeOf(r, section(sec), false), sizeOf(r, section(sec), true)
		if bounded.empty() { // left out of a request, and of the estimate
			continue
		}
		n := bedrock.EncodedLen(sectionValue(r, section(sec)))
		if lower.lower != bounded.lower || n < bounded.lower || n > bounded.upper {
			errs = append(errs, fmt.Errorf("%s: JSON of %d bytes outside [%d (%d), %d]", name, n, bounded.lower, lower.lower, bounded.upper))
		}
	}
	return errors.Join(errs...)
}

// FuzzPromptCache: whatever the points and blocks, and whichever the model, the request
// promptCache leaves passes CheckCachePoints, keeps every block that is not a point, and
// lists at most maxIgnoredHints paths.
func FuzzPromptCache(f *testing.F) {
	f.Add([]byte("\x00P1h t r P P1h | t P | t csv P pdf P t P"), uint8(0), uint8(0))
	f.Add([]byte("s P s P1h s P | T P t P1h | T P P | r P1h t | t P t P t P"), uint8(1), uint8(1))
	f.Add([]byte("s | T | T | T | t r"), uint8(2), uint8(2))
	models := []string{
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-sonnet-4-20250514-v1:0",
		"us.amazon.nova-pro-v1:0", "meta.llama3-1-70b-instruct-v1:0", "global.anthropic.claude-haiku-4-5-20251001-v1:0",
	}
	tokens := []string{"t", "T", "r", "pdf", "csv", "i", "u", "P", "P1h", "s"}
	f.Fuzz(func(t *testing.T, data []byte, modelIndex, flags uint8) {
		// data is a program: "|" ends a list (tools, system, then messages), other bytes
		// pick a token.
		var lists [][]string
		cur := []string{}
		for _, c := range data {
			if c == '|' {
				lists, cur = append(lists, cur), []string{}
				continue
			}
			cur = append(cur, tokens[int(c)%len(tokens)])
		}
		lists = append(lists, cur)
		// Each list keeps the tokens it can hold.
		var in shorthand
		for k, l := range lists {
			allowed := map[int]string{0: "s P P1h", 1: "t T P P1h"}[min(k, 2)]
			keep := slices.DeleteFunc(l, func(tok string) bool {
				return allowed != "" && !slices.Contains(strings.Fields(allowed), tok) || allowed == "" && tok == "s"
			})
			switch {
			case k == 0:
				in.tools = strings.Join(keep, " ")
			case k == 1:
				in.system = strings.Join(keep, " ")
			case len(keep) > 0:
				in.messages = append(in.messages, strings.Join(keep, " "))
			}
		}
		n := &namer{names: &Plan{}}
		out, _ := in.build(n)
		before := countBlocks(out)
		if err := CheckSectionSizes(out); err != nil {
			t.Fatal(err)
		}
		model := capabilities.Lookup(models[int(modelIndex)%len(models)])
		req := &chat.Request{}
		if flags&1 != 0 {
			req.CacheRetention = "24h"
		}
		promptCache(out, req, model, Options{NoAutoCache: flags&2 != 0}, n)
		if err := CheckCachePoints(out, model); err != nil {
			t.Fatalf("%s on %s: %v", data, model.ID, err)
		}
		if got := countBlocks(out); got != before {
			t.Fatalf("blocks other than points: %d, want %d", got, before)
		}
		if len(n.names.Ignored) > maxIgnoredHints {
			t.Fatalf("%d ignored paths", len(n.names.Ignored))
		}
	})
}

// countBlocks counts the blocks of a request that are not points.
func countBlocks(r *bedrock.ConverseRequest) int {
	n := 0
	if r.ToolConfig != nil {
		for _, t := range r.ToolConfig.Tools {
			n += count(t.CachePoint == nil)
		}
	}
	for _, s := range r.System {
		n += count(s.CachePoint == nil)
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			n += count(b.CachePoint == nil)
		}
	}
	return n
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}
