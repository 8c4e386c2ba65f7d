package bedrock

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/nirmata/llm-gateway/internal/jsontext"
)

// decodeEventFast decodes the payloads of the ConverseStream events without reflection:
// they are small, fixed in shape and come dozens per stream, and encoding/json spent more
// on them than the rest of the gateway's per-event work. The once-a-stream events are here
// too: encoding/json's recursion on metadata was a stream's deepest call, enough to grow
// the handler's stack past 8 KiB.
// It reports false for anything it does not handle (reasoning content, unknown event
// types, and what decoder leaves to encoding/json); the caller then decodes with
// encoding/json, which stays the reference. Unknown keys are skipped, as encoding/json
// does.
func decodeEventFast(typ string, payload []byte, ev *StreamEvent) bool {
	var s decoder
	s.Reset(payload)
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
	return ok && s.End() == nil
}

// decodeConverseFast decodes a Converse answer without reflection, for the common shape:
// text and toolUse blocks, the stop reason, usage and metrics. It reports false for anything
// else (reasoning, citations, and what decoder leaves to encoding/json); the caller then
// decodes with encoding/json, which stays the reference. Tool inputs are kept as raw JSON,
// as encoding/json keeps a json.RawMessage: the value's bytes as they came.
func decodeConverseFast(body []byte, out *ConverseResponse) bool {
	var s decoder
	s.Reset(body)
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
	return ok && s.End() == nil
}

// usage reads token counts into *dst, allocating it if nil; a repeated key fills the same
// struct, as encoding/json does.
func (s *decoder) usage(dst **TokenUsage) bool {
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
func (s *decoder) metrics(dst **Metrics) bool {
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
func (s *decoder) raw(dst *json.RawMessage) bool {
	v, err := s.ReadValue()
	if err != nil {
		return false
	}
	*dst = append(json.RawMessage(nil), v...)
	return true
}

// message reads a Message whose blocks are text or toolUse.
func (s *decoder) message(m *Message) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "role":
			return s.strInto(&m.Role)
		case "content":
			if m.Content != nil || s.Peek() != jsontext.KindArray || s.Enter() != nil {
				// null or not an array; or a repeated key, whose elements encoding/json would
				// decode into the first array's: the reference decoder
				return false
			}
			m.Content = []ContentBlock{}
			for first := true; ; first = false {
				more, err := s.NextElem(first)
				if err != nil || !more {
					return err == nil
				}
				var b ContentBlock
				if !s.block(&b) {
					return false
				}
				m.Content = append(m.Content, b)
			}
		default:
			return s.skipUnknown(key, "role", "content")
		}
	})
}

// block reads a content block holding text or toolUse; anything else is refused.
func (s *decoder) block(b *ContentBlock) bool {
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
func (s *decoder) int32(dst *int32) bool {
	var n int
	ok := s.int(&n)
	*dst = int32(n)
	return ok
}

// decoder reads one JSON value with a jsontext.Reader, whose strings (keys included)
// decode as encoding/json's do: escapes, surrogate pairs, and U+FFFD for lone surrogates
// and invalid UTF-8. Its methods report false for what they leave to encoding/json:
// malformed JSON, nesting beyond jsontext.MaxDepth (encoding/json allows 10000), a value
// of another type than the field's (null included), integers out of range (see int), and
// keys that match a field only ignoring case (see skipUnknown).
type decoder struct {
	jsontext.Reader
}

// object calls member for each key, with the reader at the key's value. A duplicate key
// is handled as encoding/json does for these fields: the last one wins.
func (s *decoder) object(member func(key []byte) bool) bool {
	if s.Peek() != jsontext.KindObject || s.Enter() != nil {
		return false
	}
	for first := true; ; first = false {
		key, more, err := s.NextKey(first)
		if err != nil || !more {
			return err == nil
		}
		if !member(key) {
			return false
		}
	}
}

func (s *decoder) strInto(dst *string) bool {
	v, ok := s.str()
	*dst = v
	return ok
}

// str reads a string value. Escapes, lone surrogates and invalid UTF-8 come out as
// encoding/json decodes them: the pair's rune, or U+FFFD.
func (s *decoder) str() (string, bool) {
	if s.Peek() != jsontext.KindString {
		return "", false
	}
	b, err := s.ReadString()
	return string(b), err == nil
}

// int reads a non-negative integer that fits an int32; negative numbers, larger ones,
// fractions and exponents are left to encoding/json.
func (s *decoder) int(dst *int) bool {
	if s.Peek() != jsontext.KindNumber {
		return false
	}
	b, err := s.ReadNumber()
	if err != nil || len(b) > 10 {
		return false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	if n > math.MaxInt32 {
		return false
	}
	*dst = n
	return true
}

// skipUnknown passes over the value of a key the struct does not have (Bedrock pads events
// with "p"). encoding/json matches keys case-insensitively, so a key that folds to a known
// one is left to it.
func (s *decoder) skipUnknown(key []byte, known ...string) bool {
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return s.SkipValue() == nil
}
