package translate

import (
	"strconv"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
)

// Prompt caching (docs/PROTOCOL.md 12, docs/BEDROCK.md H). A client's cache_control hints
// are checked first (checkHints), become cachePoint blocks where the conversation is built
// (messages.go), and after the tools once toolConfig is built; then promptCache, the last
// step of Request, adds the automatic points and normalises every point in one pass over
// the finished request, so it sees each block as Bedrock will.

// Values of a cache hint and of prompt_cache_retention (docs/PROTOCOL.md 12).
const (
	hintEphemeral = "ephemeral"
	ttl5m         = "5m"
	ttl1h         = "1h"
	// retention24h asks automatic points for the long TTL; retentionInMemory is OpenAI's
	// default, which the 5-minute TTL is.
	retention24h      = "24h"
	retentionInMemory = "in-memory"
)

// maxCachePoints is the most points Bedrock takes, tools, system and messages together
// (H rule 2).
const maxCachePoints = 4

// maxIgnoredHints bounds the paths of dropped hints a request lists as ignored: as many as
// the x-gateway-ignored-params header shows (core.MaxIgnored). CacheStats counts them all.
const maxIgnoredHints = 32

// CacheStats says what became of a request's prompt-cache points (docs/PROTOCOL.md 12).
// Only counts: no path or text.
type CacheStats struct {
	// Hints: points made from the client's cache_control hints; Auto: points the gateway
	// added (12.2).
	Hints, Auto int
	// Misplaced: points dropped by rule 1 (nothing before them, or right after a reasoning
	// block or a document that is not a PDF); Merged: points right after another point,
	// which stand for the same prefix and became one with it.
	Misplaced, Merged int
	// Unsupported: points dropped because the model has no prompt caching, or takes no
	// point in the tools (rule 2).
	Unsupported int
	// Downgraded: "1h" TTLs lowered to the default, because the model lacks it (rule 2) or
	// a "5m" point comes before (rule 3).
	Downgraded int
	// OverLimit: points dropped beyond Bedrock's four (rule 4).
	OverLimit int
	// Sent: the points the request carries.
	Sent int
}

// Changed reports whether normalisation dropped or changed a point.
func (s CacheStats) Changed() bool {
	return s.Misplaced+s.Merged+s.Unsupported+s.Downgraded+s.OverLimit > 0
}

// hintSource is a client hint behind a cachePoint: where it is, and whether it asked for
// 1h. Its path is written only when it is listed as ignored.
type hintSource struct {
	// msg and part are the message and part it is on, part -1 for the message's own; tool
	// is the tool it is on instead, msg then its index.
	msg, part int
	tool      *chat.Tool
	long      bool
}

func messageHint(i int) hintSource            { return hintSource{msg: i, part: -1} }
func partHint(i, j int) hintSource            { return hintSource{msg: i, part: j} }
func toolHint(i int, t *chat.Tool) hintSource { return hintSource{msg: i, tool: t} }

// path is the hint's JSON path ("messages[2].content[1].cache_control").
func (h hintSource) path() string {
	switch {
	case h.tool != nil:
		return toolHintPath(h.msg, h.tool)
	case h.part < 0:
		return messageHintPath(h.msg)
	}
	return partHintPath(h.msg, h.part)
}

// hintSources maps each cachePoint made from client hints to the hints behind it (several
// once merged), so what normalisation drops is listed by the paths the client wrote. Not
// safe for concurrent use.
type hintSources map[*bedrock.CachePoint][]hintSource

// checkHints refuses a hint the gateway cannot honour, naming it: a cache_control whose
// type is not "ephemeral" or whose ttl is not "5m" or "1h", and a prompt_cache_retention
// other than "in-memory" or "24h". Every hint is checked, those of tools the request does
// not send and of messages left without content too.
func checkHints(req *chat.Request) error {
	switch r := req.CacheRetention; r {
	case "", retentionInMemory, retention24h:
	default:
		return unsupportedf(`prompt_cache_retention %s is not one of "in-memory", "24h"`, clip.Quote(r))
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.CacheControl != nil {
			if err := checkHint(m.CacheControl, messageHintPath(i)); err != nil {
				return err
			}
		}
		for j := range m.Parts {
			if cc := m.Parts[j].CacheControl; cc != nil {
				if err := checkHint(cc, partHintPath(i, j)); err != nil {
					return err
				}
			}
		}
	}
	for i := range req.Tools {
		if t := &req.Tools[i]; t.CacheControl != nil {
			if err := checkHint(t.CacheControl, toolHintPath(i, t)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkHint(cc *chat.CacheControl, path string) error {
	switch cc.Type {
	case hintEphemeral:
	case "":
		return invalidf(`%s.type is missing; the only type is "ephemeral"`, path)
	default:
		return unsupportedf(`%s.type %s is not supported; the only type is "ephemeral"`, path, clip.Quote(cc.Type))
	}
	switch cc.TTL {
	case "", ttl5m, ttl1h:
		return nil
	}
	return unsupportedf(`%s.ttl %s is not one of "5m", "1h"`, path, clip.Quote(cc.TTL))
}

func messageHintPath(i int) string { return "messages[" + strconv.Itoa(i) + "].cache_control" }
func partHintPath(i, j int) string { return partPath(i, j) + ".cache_control" }

func toolHintPath(i int, t *chat.Tool) string {
	if t.CacheControlInFunction {
		return ToolPath(i, t) + ".cache_control"
	}
	return "tools[" + strconv.Itoa(i) + "].cache_control"
}

// point makes the cachePoint block a checked hint asks for, remembering the hint.
// "5m" is Bedrock's default and goes as no ttl.
func (n *namer) point(cc *chat.CacheControl, h hintSource) bedrock.ContentBlock {
	cp := &bedrock.CachePoint{Type: bedrock.CachePointDefault}
	if cc.TTL == ttl1h {
		cp.TTL = ttl1h
	}
	if n.hints == nil {
		n.hints = hintSources{}
	}
	h.long = cp.TTL == ttl1h
	n.hints[cp] = append(n.hints[cp], h)
	return bedrock.ContentBlock{CachePoint: cp}
}

// ignoreHint lists a hint that had no effect, or a member of it ("ttl").
func (n *namer) ignoreHint(h hintSource, member string) {
	if len(n.names.Ignored) < maxIgnoredHints {
		path := h.path()
		if member != "" {
			path += "." + member
		}
		n.names.Ignored = append(n.names.Ignored, path)
	}
}

// partPoint appends the point part j of message i asks for to blocks, right after the
// part's block: the part gave one when blocks grew past n. A part that gave none (blank
// text) takes its hint with it.
func (c *conversation) partPoint(blocks []bedrock.ContentBlock, n, i, j int, p *chat.Part) []bedrock.ContentBlock {
	if p.CacheControl == nil {
		return blocks
	}
	if len(blocks) == n {
		c.names.ignoreHint(partHint(i, j), "")
		return blocks
	}
	return append(blocks, c.names.point(p.CacheControl, partHint(i, j)))
}

// messagePoint appends the point message i asks for to blocks, which end with its last
// block.
func (c *conversation) messagePoint(blocks []bedrock.ContentBlock, i int, m *chat.Message) []bedrock.ContentBlock {
	if m.CacheControl == nil {
		return blocks
	}
	return append(blocks, c.names.point(m.CacheControl, messageHint(i)))
}

// messageEnd is messagePoint for the blocks of a whole message: a message that gave none
// takes its hint with it.
func (c *conversation) messageEnd(blocks []bedrock.ContentBlock, i int, m *chat.Message) []bedrock.ContentBlock {
	if len(blocks) == 0 {
		if m.CacheControl != nil {
			c.names.ignoreHint(messageHint(i), "")
		}
		return blocks
	}
	return c.messagePoint(blocks, i, m)
}

// toolMessagePoints are the points of tool message i: one per hint, of its parts and then
// of the message, all to go right after its toolResult block, since toolResult.content
// has no cachePoint member (H rule 1). Normalisation makes them one.
func (c *conversation) toolMessagePoints(i int, m *chat.Message) []bedrock.ContentBlock {
	var out []bedrock.ContentBlock
	for j := range m.Parts {
		if cc := m.Parts[j].CacheControl; cc != nil {
			out = append(out, c.names.point(cc, partHint(i, j)))
		}
	}
	return c.messagePoint(out, i, m)
}

// toolPoints puts each hinted tool's point right after it in cfg.Tools, as an element of
// its own; a hinted tool the request does not send (allowed_tools, tool_choice "none"
// without tool history) takes its hint with it.
func toolPoints(cfg *bedrock.ToolConfig, tools []chat.Tool, n *namer) {
	hinted := false
	for i := range tools {
		hinted = hinted || tools[i].CacheControl != nil
	}
	if !hinted {
		return
	}
	var sent []bedrock.Tool
	if cfg != nil {
		sent = cfg.Tools
	}
	out := make([]bedrock.Tool, 0, len(sent)+len(tools))
	k := 0
	for i := range tools {
		t := &tools[i]
		// cfg.Tools holds the sent tools in the order of tools, under their Bedrock names.
		isSent := k < len(sent) && sent[k].ToolSpec != nil && sent[k].ToolSpec.Name == n.toolName(t.Name)
		if isSent {
			out = append(out, sent[k])
			k++
		}
		switch {
		case t.CacheControl == nil:
		case isSent:
			out = append(out, bedrock.Tool{CachePoint: n.point(t.CacheControl, toolHint(i, t)).CachePoint})
		default:
			n.ignoreHint(toolHint(i, t), "")
		}
	}
	if cfg != nil {
		cfg.Tools = append(out, sent[k:]...)
	}
}

// section is where a point stands, in the order Bedrock reads a request (H rule 3).
type section uint8

const (
	inTools section = iota
	inSystem
	inMessages
)

// pointRef is one point of the request, in Bedrock's order.
type pointRef struct {
	cp      *bedrock.CachePoint
	sec     section
	auto    bool
	dropped bool
}

// what stands right before a block, for rule 1.
type before uint8

const (
	beforeNothing before = iota
	beforeContent
	// beforeBarrier: a reasoning block or a document that is not a PDF.
	beforeBarrier
)

// cachePass adds the automatic points to a finished request and normalises every point.
// Not safe for concurrent use.
type cachePass struct {
	n     *namer
	model capabilities.Model
	stats *CacheStats
	refs  []pointRef
	// auto are the points the pass added.
	auto [3]*bedrock.CachePoint
	// The walk's state: what stands before the current block, and the index in refs of the
	// point right before it (-1 when the block before is not a kept point).
	before before
	last   int
}

// promptCache is Request's last step (docs/PROTOCOL.md 12): it places the tools' hint
// points, adds the automatic points unless opts says not to, then applies 12.1's rules in
// order over client and automatic points together, dropping automatic ones first. What it
// did goes to the Stats of n, the hints it dropped to n's Ignored.
func promptCache(out *bedrock.ConverseRequest, req *chat.Request, model capabilities.Model, opts Options, n *namer) {
	toolPoints(out.ToolConfig, req.Tools, n)
	if req.CacheRetention == retention24h && (opts.NoAutoCache || !model.Cache1h) {
		n.names.Ignored = append(n.names.Ignored, "prompt_cache_retention")
	}
	p := cachePass{n: n, model: model, stats: &n.names.Stats.Cache}
	if !opts.NoAutoCache && model.CacheMinTokens > 0 {
		p.addAuto(out)
	}
	if len(n.hints) == 0 && p.stats.Auto == 0 {
		return
	}
	p.walk(out)
	p.autoTTL(req.CacheRetention == retention24h)
	p.modelRule()
	p.orderRule()
	p.limitRule()
	p.filter(out)
}

// addAuto adds the automatic points (12.2): after the tools (not where the model takes no
// point there), after the system prompt, after the last message's last block; each where
// no point stands already and the estimated tokens up to it reach the model's minimum.
func (p *cachePass) addAuto(out *bedrock.ConverseRequest) {
	tools, system, messages := reaches(out, p.model.CacheMinTokens)
	add := func(cp **bedrock.CachePoint) *bedrock.CachePoint {
		*cp = &bedrock.CachePoint{Type: bedrock.CachePointDefault}
		p.stats.Auto++
		return *cp
	}
	if cfg := out.ToolConfig; tools && cfg != nil && !p.model.NoToolCachePoint && len(cfg.Tools) > 0 && cfg.Tools[len(cfg.Tools)-1].CachePoint == nil {
		cfg.Tools = append(cfg.Tools, bedrock.Tool{CachePoint: add(&p.auto[inTools])})
	}
	if s := out.System; system && len(s) > 0 && s[len(s)-1].CachePoint == nil {
		out.System = append(s, bedrock.SystemBlock{CachePoint: add(&p.auto[inSystem])})
	}
	if len(out.Messages) == 0 || !messages {
		return
	}
	m := &out.Messages[len(out.Messages)-1]
	if c := m.Content; len(c) > 0 && c[len(c)-1].CachePoint == nil {
		m.Content = append(c, bedrock.ContentBlock{CachePoint: add(&p.auto[inMessages])})
	}
}

// reaches says, for the ends of the tools, the system prompt and the messages, whether the
// tokens up to there, estimated as the bytes of their Converse JSON / 4 (tools, then
// system, then messages, as Bedrock reads them), reach minTokens. The JSON length is
// bracketed first by walks over the blocks (sectionSize): the content's own bytes, a lower
// bound that decides for a request past the minimum, then, only when that falls short, an
// upper bound that decides for one far below it. The JSON is encoded, and only counted,
// when the brackets leave the answer open, so a request is encoded twice only near the
// minimum; a large one, whose images and documents would cost most to encode, never.
func reaches(out *bedrock.ConverseRequest, minTokens int) (tools, system, messages bool) {
	need := 4 * minTokens
	var sizes [3]sectionSize
	for sec := range sizes {
		sizes[sec] = sizeOf(out, section(sec), false)
	}
	var reached [3]bool
	for end := range sizes {
		if sizes[end].empty() {
			continue
		}
		if sum(sizes[:end+1], false) < need {
			for k := range end + 1 {
				if !sizes[k].bounded {
					sizes[k] = sizeOf(out, section(k), true)
				}
			}
			if sum(sizes[:end+1], true) >= need {
				// Open: count every section up to here exactly.
				for k := range end + 1 {
					if sz := &sizes[k]; sz.lower != sz.upper {
						sz.lower = bedrock.EncodedLen(sectionValue(out, section(k)))
						sz.upper = sz.lower
					}
				}
			}
		}
		reached[end] = sum(sizes[:end+1], false) >= need
	}
	return reached[inTools], reached[inSystem], reached[inMessages]
}

// sectionSize brackets the length of a section's JSON: lower counts what the JSON holds
// besides syntax and escapes (the bytes of images and documents as their base64); upper,
// counted only when bounded, adds every escape a string could need and objectSyntax for
// each object around them. An empty section is left out of a request and counts nothing.
// FuzzPromptCache and FuzzRequest hold lower <= the JSON <= upper.
type sectionSize struct {
	lower, upper int
	bounded      bool
	objects      int
}

func (s sectionSize) empty() bool { return s.objects == 0 }

// sum adds the lower or upper bounds of sizes.
func sum(sizes []sectionSize, upper bool) int {
	n := 0
	for _, s := range sizes {
		if upper {
			n += s.upper
		} else {
			n += s.lower
		}
	}
	return n
}

// objectSyntax is more than the keys, quotes, brackets and commas of any one object of a
// Converse request around its strings and raw values, the section's own brackets included:
// a message, a block, a tool result's item, a tool, a cache point
// ({"toolResult":{"toolUseId":"","content":[],"status":"success"}}, the longest, is 65 bytes).
const objectSyntax = 96

// jsonWidth is the most bytes of JSON a byte of a string can take: 6 for '"', '\\' and
// control characters (\u00XX), 3 for one that may be invalid UTF-8 (written as U+FFFD).
var jsonWidth = func() (w [256]uint8) {
	for c := range w {
		switch {
		case c < 0x20, c == '"', c == '\\':
			w[c] = 6
		case c >= 0x80:
			w[c] = 3
		default:
			w[c] = 1
		}
	}
	return w
}()

func (s *sectionSize) text(str string) {
	s.lower += len(str)
	if s.bounded {
		for i := 0; i < len(str); i++ {
			s.upper += int(jsonWidth[str[i]])
		}
	}
}

// raw counts a compact, checked raw JSON value, written as it is but for invalid UTF-8.
func (s *sectionSize) raw(v []byte) {
	s.lower += len(v)
	if s.bounded {
		for _, c := range v {
			s.upper += 1 + 2*int(c>>7)
		}
	}
}

// bytes counts n bytes, written as base64.
func (s *sectionSize) bytes(n int) {
	s.lower += base64Len(n)
	s.upper += base64Len(n)
}

func (s *sectionSize) object() {
	s.objects++
	s.upper += objectSyntax
}

// sizeOf brackets section sec of out, with the upper bound when bounded.
func sizeOf(out *bedrock.ConverseRequest, sec section, bounded bool) sectionSize {
	s := sectionSize{bounded: bounded}
	switch sec {
	case inTools:
		if out.ToolConfig != nil {
			s.tools(out.ToolConfig.Tools)
		}
	case inSystem:
		s.system(out.System)
	default:
		s.messages(out.Messages)
	}
	return s
}

// sectionValue is section sec of out as it is encoded: a pointer, which an interface holds
// without a copy of the slice header.
func sectionValue(out *bedrock.ConverseRequest, sec section) any {
	switch sec {
	case inTools:
		return &out.ToolConfig.Tools
	case inSystem:
		return &out.System
	}
	return &out.Messages
}

func (s *sectionSize) tools(tools []bedrock.Tool) {
	for _, t := range tools {
		s.object()
		if spec := t.ToolSpec; spec != nil {
			s.text(spec.Name)
			s.text(spec.Description)
			s.raw(spec.InputSchema.JSON)
		}
	}
}

func (s *sectionSize) system(system []bedrock.SystemBlock) {
	for _, b := range system {
		s.object()
		s.text(b.Text)
	}
}

func (s *sectionSize) messages(msgs []bedrock.Message) {
	for _, m := range msgs {
		s.object()
		for _, b := range m.Content {
			s.object()
			switch {
			case b.Text != nil:
				s.text(*b.Text)
			case b.Image != nil:
				s.bytes(len(b.Image.Source.Bytes))
			case b.Document != nil:
				s.text(b.Document.Name)
				s.bytes(len(b.Document.Source.Bytes))
			case b.ToolUse != nil:
				s.text(b.ToolUse.ToolUseID)
				s.text(b.ToolUse.Name)
				s.raw(b.ToolUse.Input)
			case b.ToolResult != nil:
				s.text(b.ToolResult.ToolUseID)
				for _, c := range b.ToolResult.Content {
					s.object()
					switch {
					case c.Text != nil:
						s.text(*c.Text)
					case c.Image != nil:
						s.bytes(len(c.Image.Source.Bytes))
					default:
						s.raw(c.JSON)
					}
				}
			case b.ReasoningContent != nil:
				if t := b.ReasoningContent.ReasoningText; t != nil {
					s.object()
					s.text(t.Text)
					s.text(t.Signature)
				}
				s.text(b.ReasoningContent.RedactedContent)
			}
			// A cache point adds only syntax.
		}
	}
}

func base64Len(n int) int { return (n + 2) / 3 * 4 }

// walk lists every point in Bedrock's order and applies rule 1 on the way: a point with
// nothing before it in its list, or right after a reasoning block or a document that is
// not a PDF, is dropped; a point right after a kept point becomes one with it, with the
// longer TTL.
func (p *cachePass) walk(out *bedrock.ConverseRequest) {
	p.refs = make([]pointRef, 0, len(p.n.hints)+p.stats.Auto)
	if cfg := out.ToolConfig; cfg != nil {
		p.start()
		for _, t := range cfg.Tools {
			p.block(t.CachePoint, inTools, false)
		}
	}
	p.start()
	for _, s := range out.System {
		p.block(s.CachePoint, inSystem, false)
	}
	for _, m := range out.Messages {
		p.start()
		for _, b := range m.Content {
			p.block(b.CachePoint, inMessages, b.ReasoningContent != nil || b.Document != nil && b.Document.Format != "pdf")
		}
	}
}

// start begins a list: nothing stands before its first block.
func (p *cachePass) start() { p.before, p.last = beforeNothing, -1 }

// block takes the next block of a list: a point (cp) or content (barrier: a reasoning
// block or a non-PDF document).
func (p *cachePass) block(cp *bedrock.CachePoint, sec section, barrier bool) {
	if cp == nil {
		p.before, p.last = beforeContent, -1
		if barrier {
			p.before = beforeBarrier
		}
		return
	}
	ref := pointRef{cp: cp, sec: sec, auto: cp == p.auto[sec]}
	switch {
	case p.last >= 0:
		into := p.refs[p.last].cp
		if cp.TTL == ttl1h {
			into.TTL = ttl1h
		}
		if srcs := p.n.hints[cp]; len(srcs) > 0 {
			p.n.hints[into] = append(p.n.hints[into], srcs...)
		}
		ref.dropped = true
		p.stats.Merged++
	case p.before != beforeContent:
		p.drop(&ref)
		p.stats.Misplaced++
	default:
		p.last = len(p.refs)
	}
	if !ref.auto {
		p.stats.Hints++
	}
	p.refs = append(p.refs, ref)
}

// drop drops a point, listing the hints behind it.
func (p *cachePass) drop(ref *pointRef) {
	ref.dropped = true
	for _, h := range p.n.hints[ref.cp] {
		p.n.ignoreHint(h, "")
	}
}

// shorten lowers a "1h" point to the default TTL, listing the ttl of the hints that asked
// for it.
func (p *cachePass) shorten(ref *pointRef) {
	ref.cp.TTL = ""
	p.stats.Downgraded++
	for _, h := range p.n.hints[ref.cp] {
		if h.long {
			p.n.ignoreHint(h, "ttl")
		}
	}
}

// autoTTL gives the automatic points "1h" on a model that has it, when
// prompt_cache_retention asks for it or a later client point does (which rule 3 would
// otherwise shorten).
func (p *cachePass) autoTTL(retention bool) {
	if !p.model.Cache1h {
		return
	}
	laterLong := false
	for k := len(p.refs) - 1; k >= 0; k-- {
		r := &p.refs[k]
		switch {
		case r.dropped:
		case r.auto && (retention || laterLong):
			r.cp.TTL = ttl1h
		case !r.auto && r.cp.TTL == ttl1h:
			laterLong = true
		}
	}
}

// modelRule is rule 2: every point goes on a model without prompt caching, tools points
// on a model that refuses them (Nova); "1h" becomes the default where the model lacks it.
func (p *cachePass) modelRule() {
	for k := range p.refs {
		r := &p.refs[k]
		switch {
		case r.dropped:
		case p.model.CacheMinTokens == 0, r.sec == inTools && p.model.NoToolCachePoint:
			p.drop(r)
			p.stats.Unsupported++
		case r.cp.TTL == ttl1h && !p.model.Cache1h:
			p.shorten(r)
		}
	}
}

// orderRule is rule 3: along tools, system, messages a TTL never grows, so "1h" after a
// shorter point becomes the default.
func (p *cachePass) orderRule() {
	short := false
	for k := range p.refs {
		r := &p.refs[k]
		switch {
		case r.dropped:
		case r.cp.TTL != ttl1h:
			short = true
		case short:
			p.shorten(r)
		}
	}
}

// limitRule is rule 4: at most four points. Client points are kept before automatic
// ones; within each, first the last tools point, the last system point and the last two
// message points, then the others, latest first.
func (p *cachePass) limitRule() {
	kept := 0
	for _, r := range p.refs {
		if !r.dropped {
			kept++
		}
	}
	if kept <= maxCachePoints {
		p.stats.Sent = kept
		return
	}
	keep := make([]bool, len(p.refs))
	chosen := 0
	for _, auto := range []bool{false, true} {
		// The preferred points of this kind, found from the end.
		preferred := make([]bool, len(p.refs))
		var perSection [3]int
		for k := len(p.refs) - 1; k >= 0; k-- {
			r := p.refs[k]
			if r.dropped || r.auto != auto {
				continue
			}
			limit := 1
			if r.sec == inMessages {
				limit = 2
			}
			if perSection[r.sec] < limit {
				perSection[r.sec]++
				preferred[k] = true
			}
		}
		for _, pass := range []bool{true, false} {
			for k := len(p.refs) - 1; k >= 0 && chosen < maxCachePoints; k-- {
				r := p.refs[k]
				if !r.dropped && r.auto == auto && preferred[k] == pass && !keep[k] {
					keep[k] = true
					chosen++
				}
			}
		}
	}
	for k := range p.refs {
		if r := &p.refs[k]; !r.dropped && !keep[k] {
			p.drop(r)
			p.stats.OverLimit++
		}
	}
	p.stats.Sent = chosen
}

// filter takes the dropped points out of the request. The lists are walked in the order
// walk listed them, so the k-th point met is refs[k].
func (p *cachePass) filter(out *bedrock.ConverseRequest) {
	k := 0
	gone := func(cp *bedrock.CachePoint) bool {
		if cp == nil {
			return false
		}
		k++
		return p.refs[k-1].dropped
	}
	if cfg := out.ToolConfig; cfg != nil {
		kept := cfg.Tools[:0]
		for _, t := range cfg.Tools {
			if !gone(t.CachePoint) {
				kept = append(kept, t)
			}
		}
		cfg.Tools = kept
	}
	system := out.System[:0]
	for _, s := range out.System {
		if !gone(s.CachePoint) {
			system = append(system, s)
		}
	}
	out.System = system
	for i := range out.Messages {
		m := &out.Messages[i]
		content := m.Content[:0]
		for _, b := range m.Content {
			if !gone(b.CachePoint) {
				content = append(content, b)
			}
		}
		m.Content = content
	}
}
