package bedrock

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeEventFast decodes the payloads of the ConverseStream events without reflection:
// they are small, fixed in shape and come dozens per stream, and encoding/json spent more
// on them than the rest of the gateway's per-event work. The once-a-stream events are here
// too: encoding/json's recursion on metadata was a stream's deepest call, enough to grow
// the handler's stack past 8 KiB (see the server's TestStreamHandlerFitsAnEightKiBStack).
// It reports false for anything it does not handle (reasoning content, unknown event
// types, malformed JSON); the caller then decodes with encoding/json, which stays the
// reference. Unknown keys are skipped, as encoding/json does.
func decodeEventFast(typ string, payload []byte, ev *StreamEvent) bool {
	s := scanner{b: payload}
	var ok bool
	switch typ {
	case EventContentBlockDelta:
		d := &ContentBlockDeltaEvent{}
		ok = s.object(func(key []byte) bool {
			switch string(key) {
			case "contentBlockIndex":
				return s.int(&d.ContentBlockIndex)
			case "delta":
				return s.object(func(key []byte) bool {
					switch string(key) {
					case "text":
						text, ok := s.str()
						d.Delta.Text = &text
						return ok
					case "toolUse":
						if d.Delta.ToolUse == nil {
							d.Delta.ToolUse = &ToolUseDelta{}
						}
						return s.object(func(key []byte) bool {
							if string(key) == "input" {
								return s.strInto(&d.Delta.ToolUse.Input)
							}
							return s.skipUnknown(key, "input")
						})
					default:
						return false // reasoningContent and newer members: the reference decoder
					}
				})
			default:
				return s.skipUnknown(key, "contentBlockIndex", "delta")
			}
		})
		ev.ContentBlockDelta = d
	case EventContentBlockStart:
		st := &ContentBlockStartEvent{}
		ok = s.object(func(key []byte) bool {
			switch string(key) {
			case "contentBlockIndex":
				return s.int(&st.ContentBlockIndex)
			case "start":
				return s.object(func(key []byte) bool {
					if string(key) != "toolUse" {
						return s.skipUnknown(key, "toolUse")
					}
					if st.Start.ToolUse == nil {
						st.Start.ToolUse = &ToolUseBlockStart{}
					}
					return s.object(func(key []byte) bool {
						switch string(key) {
						case "toolUseId":
							return s.strInto(&st.Start.ToolUse.ToolUseID)
						case "name":
							return s.strInto(&st.Start.ToolUse.Name)
						default:
							return s.skipUnknown(key, "toolUseId", "name")
						}
					})
				})
			default:
				return s.skipUnknown(key, "contentBlockIndex", "start")
			}
		})
		ev.ContentBlockStart = st
	case EventContentBlockStop:
		st := &ContentBlockStopEvent{}
		ok = s.object(func(key []byte) bool {
			if string(key) == "contentBlockIndex" {
				return s.int(&st.ContentBlockIndex)
			}
			return s.skipUnknown(key, "contentBlockIndex")
		})
		ev.ContentBlockStop = st
	case EventMessageStart:
		st := &MessageStartEvent{}
		ok = s.object(func(key []byte) bool {
			if string(key) == "role" {
				return s.strInto(&st.Role)
			}
			return s.skipUnknown(key, "role")
		})
		ev.MessageStart = st
	case EventMessageStop:
		st := &MessageStopEvent{}
		ok = s.object(func(key []byte) bool {
			switch string(key) {
			case "stopReason":
				return s.strInto(&st.StopReason)
			case "additionalModelResponseFields":
				return s.raw(&st.AdditionalModelResponseFields)
			default:
				return s.skipUnknown(key, "stopReason", "additionalModelResponseFields")
			}
		})
		ev.MessageStop = st
	case EventMetadata:
		m := &MetadataEvent{}
		ok = s.object(func(key []byte) bool {
			switch string(key) {
			case "usage":
				return s.usage(&m.Usage)
			case "metrics":
				return s.metrics(&m.Metrics)
			default:
				return s.skipUnknown(key, "usage", "metrics")
			}
		})
		ev.Metadata = m
	default:
		return false // event types this gateway does not know: the reference decoder
	}
	return ok && s.end()
}

// decodeConverseFast decodes a Converse answer without reflection, for the common shape:
// text and toolUse blocks, the stop reason, usage and metrics. It reports false for anything
// else (reasoning, citations, numbers out of range, malformed JSON); the caller then decodes
// with encoding/json, which stays the reference. Tool inputs are kept as raw JSON, as
// encoding/json keeps a json.RawMessage: the value's bytes as they came.
func decodeConverseFast(body []byte, out *ConverseResponse) bool {
	s := scanner{b: body}
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "output":
			if out.Output == nil {
				out.Output = &ConverseOutput{}
			}
			return s.object(func(key []byte) bool {
				if string(key) != "message" {
					return s.skipUnknown(key, "message")
				}
				if out.Output.Message == nil {
					out.Output.Message = &Message{}
				}
				return s.message(out.Output.Message)
			})
		case "stopReason":
			return s.strInto(&out.StopReason)
		case "usage":
			return s.usage(&out.Usage)
		case "metrics":
			return s.metrics(&out.Metrics)
		default:
			return s.skipUnknown(key, "output", "stopReason", "usage", "metrics")
		}
	})
	return ok && s.end()
}

// usage reads token counts into *dst, allocating it if nil; a repeated key fills the same
// struct, as encoding/json does.
func (s *scanner) usage(dst **TokenUsage) bool {
	if *dst == nil {
		*dst = &TokenUsage{}
	}
	u := *dst
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "inputTokens":
			return s.int32(&u.InputTokens)
		case "outputTokens":
			return s.int32(&u.OutputTokens)
		case "totalTokens":
			return s.int32(&u.TotalTokens)
		case "cacheReadInputTokens":
			return s.int32(&u.CacheReadInputTokens)
		case "cacheWriteInputTokens":
			return s.int32(&u.CacheWriteInputTokens)
		default:
			return s.skipUnknown(key, "inputTokens", "outputTokens", "totalTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
		}
	})
}

// metrics reads the latency into *dst, allocating it if nil.
func (s *scanner) metrics(dst **Metrics) bool {
	if *dst == nil {
		*dst = &Metrics{}
	}
	m := *dst
	return s.object(func(key []byte) bool {
		if string(key) != "latencyMs" {
			return s.skipUnknown(key, "latencyMs")
		}
		var n int
		ok := s.int(&n)
		m.LatencyMs = int64(n)
		return ok
	})
}

// raw copies any value as it came, as encoding/json fills a json.RawMessage.
func (s *scanner) raw(dst *json.RawMessage) bool {
	s.ws()
	start := s.i
	if !s.skip() {
		return false
	}
	*dst = append(json.RawMessage(nil), s.b[start:s.i]...)
	return true
}

// message reads a Message whose blocks are text or toolUse.
func (s *scanner) message(m *Message) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "role":
			return s.strInto(&m.Role)
		case "content":
			if m.Content != nil || !s.consume('[') {
				// null or not an array; or a repeated key, whose elements encoding/json would
				// decode into the first array's: the reference decoder
				return false
			}
			m.Content = []ContentBlock{}
			if s.consume(']') {
				return true
			}
			for {
				var b ContentBlock
				if !s.block(&b) {
					return false
				}
				m.Content = append(m.Content, b)
				if s.consume(',') {
					continue
				}
				return s.consume(']')
			}
		default:
			return s.skipUnknown(key, "role", "content")
		}
	})
}

// block reads a content block holding text or toolUse; anything else is refused.
func (s *scanner) block(b *ContentBlock) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "text":
			text, ok := s.str()
			b.Text = &text
			return ok
		case "toolUse":
			if b.ToolUse == nil {
				b.ToolUse = &ToolUseBlock{}
			}
			u := b.ToolUse
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "toolUseId":
					return s.strInto(&u.ToolUseID)
				case "name":
					return s.strInto(&u.Name)
				case "input":
					return s.raw(&u.Input)
				default:
					return s.skipUnknown(key, "toolUseId", "name", "input")
				}
			})
		default:
			return false // image, reasoning, citations…: the reference decoder
		}
	})
}

// int32 reads a non-negative integer that fits an int32.
func (s *scanner) int32(dst *int32) bool {
	var n int
	ok := s.int(&n)
	*dst = int32(n)
	return ok
}

// scanner reads one JSON value from b. Its methods report false on anything unexpected.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxDepth is encoding/json's nesting limit. Past it the fast path gives up; without a
// limit, a payload of nested brackets would overflow the stack, which no recover catches.
const maxDepth = 10000

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

func (s *scanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object calls member for each key, with the scanner at the key's value. A duplicate key
// is handled as encoding/json does for these fields: the last one wins.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.consume('{') || s.depth >= maxDepth {
		return false
	}
	s.depth++
	defer func() { s.depth-- }()
	if s.consume('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.rawString()
		if !ok || !s.consume(':') || !member(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// rawString returns the bytes of a string without escapes; it refuses escaped strings,
// which only keys would be here and Bedrock's keys never are.
func (s *scanner) rawString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func (s *scanner) strInto(dst *string) bool {
	v, ok := s.str()
	*dst = v
	return ok
}

// str reads a JSON string value, unescaping it.
func (s *scanner) str() (string, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(s.b[start:j]) {
				return "", false // encoding/json replaces invalid UTF-8; let it
			}
			s.i = j + 1
			return string(s.b[start:j]), true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// escaped reads a string that has escapes, from its first byte at start.
func (s *scanner) escaped(start int) (string, bool) {
	out := make([]byte, 0, len(s.b)-start)
	for j := start; j < len(s.b); {
		c := s.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			s.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(s.b) {
			return "", false
		}
		switch e := s.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, ok := s.unicodeEscape(j)
			if !ok {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			j += n
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

// unicodeEscape reads \uXXXX at j, and a following low surrogate when it starts a pair.
// It refuses lone surrogates, which encoding/json turns into U+FFFD: the caller then
// falls back to it.
func (s *scanner) unicodeEscape(j int) (rune, int, bool) {
	r, ok := s.hex4(j + 2)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	if j+12 > len(s.b) || s.b[j+6] != '\\' || s.b[j+7] != 'u' {
		return 0, 0, false
	}
	lo, ok := s.hex4(j + 8)
	if !ok {
		return 0, 0, false
	}
	if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
		return 0, 0, false
	}
	return r, 12, true
}

func (s *scanner) hex4(j int) (rune, bool) {
	if j+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[j:j+4]), 16, 32)
	return rune(v), err == nil
}

// int reads a non-negative integer that fits an int.
func (s *scanner) int(dst *int) bool {
	s.ws()
	start := s.i
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if n > (math.MaxInt32-9)/10 {
			return false // beyond int32: left to encoding/json
		}
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || (s.b[start] == '0' && s.i-start > 1) {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	*dst = n
	return true
}

// skipUnknown passes over the value of a key the struct does not have (Bedrock pads events
// with "p"). encoding/json matches keys case-insensitively, so a key that folds to a known
// one is left to it.
func (s *scanner) skipUnknown(key []byte, known ...string) bool {
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return s.skip()
}

// skip passes over any value, checking it as strictly as encoding/json does.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{':
		return s.object(func([]byte) bool { return s.skip() })
	case '[':
		if s.depth >= maxDepth {
			return false
		}
		s.depth++
		defer func() { s.depth-- }()
		s.i++
		if s.consume(']') {
			return true
		}
		for {
			if !s.skip() {
				return false
			}
			if s.consume(',') {
				continue
			}
			return s.consume(']')
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// number passes over a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	digits := func() bool {
		start := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > start
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if !digits() {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return false
		}
	}
	return true
}
