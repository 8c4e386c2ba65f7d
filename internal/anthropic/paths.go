package anthropic

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nirmata/llm-gateway/internal/fault"
)

// loc is where a block is in the body: messages.<msg>.content.<block>, and
// .content.<inner> within a tool_result; the message itself when block is -1;
// system.<block> (or the whole system prompt, block -1) when msg is -1. Its path is
// written only when a refusal names it.
type loc struct{ msg, block, inner int }

// systemLoc is the system prompt.
var systemLoc = loc{msg: -1, block: -1, inner: -1}

func (l loc) String() string {
	if l.msg < 0 {
		if l.block < 0 {
			return "system"
		}
		return "system." + strconv.Itoa(l.block)
	}
	s := "messages." + strconv.Itoa(l.msg)
	if l.block >= 0 {
		s += ".content." + strconv.Itoa(l.block)
	}
	if l.inner >= 0 {
		s += ".content." + strconv.Itoa(l.inner)
	}
	return s
}

// toolLoc is tools.<index>.
type toolLoc int

func (t toolLoc) String() string { return "tools." + strconv.Itoa(int(t)) }

// paths is where each chat message, part, tool call and tool of a decoded request came
// from in the Anthropic body, so that a refusal naming a chat-model path
// ("messages[4].tool_calls[0].function.arguments") names the block the client wrote
// ("messages.3.content.1.input"). It holds indexes, a few slices for the whole request;
// paths are written only for a refusal.
type paths struct {
	msgs []origin
	// parts and calls are the blocks of every chat message's parts and tool calls, each
	// message's in a span of its own.
	parts, calls []loc
	// tools is each chat tool's index in the body's tools (server tools are dropped).
	tools []int
	// format is the member structured output came in: output_format or
	// output_config.format.
	format string
}

// origin is where one chat message came from: a message, a tool_result block, or the
// system prompt; and the spans of its parts and calls.
type origin struct {
	at           loc
	parts, calls span
}

// span is the range [start, end) of paths.parts or paths.calls.
type span struct{ start, end int }

func (s span) len() int { return s.end - s.start }

// rewrite names the field of a refusal err by its Anthropic path, in its Param and at the
// start of its message; any other error is returned as it is.
func (p *paths) rewrite(err error) error {
	var refused *fault.RequestError
	if !errors.As(err, &refused) || refused.Param == "" {
		return err
	}
	old := refused.Param
	refused.Param = p.anthropic(old)
	if rest, ok := strings.CutPrefix(refused.Msg, old); ok {
		refused.Msg = refused.Param + rest
	}
	return err
}

// anthropic is the Anthropic path of a chat-model path.
func (p *paths) anthropic(path string) string {
	switch {
	case strings.HasPrefix(path, "anthropic-beta: "):
		return path // a header's value, as the client sent it
	case strings.HasPrefix(path, "messages["):
		i, rest, ok := index(path[len("messages["):])
		if !ok || i >= len(p.msgs) {
			break
		}
		o := &p.msgs[i]
		if j, tail, ok := prefixIndex(rest, ".content["); ok && j < o.parts.len() {
			return p.parts[o.parts.start+j].String() + partTail(tail)
		}
		if j, tail, ok := prefixIndex(rest, ".tool_calls["); ok && j < o.calls.len() {
			return p.calls[o.calls.start+j].String() + callTail(tail)
		}
		switch {
		case rest == ".tool_call_id":
			return o.at.String() + ".tool_use_id"
		case o.at == systemLoc && strings.HasPrefix(rest, ".content"):
			return "system" // a system prompt given as a string
		}
		return o.at.String() + dotted(rest)
	case strings.HasPrefix(path, "tools["):
		i, rest, ok := index(path[len("tools["):])
		if !ok || i >= len(p.tools) {
			break
		}
		rest = strings.TrimPrefix(rest, ".function")
		if tail, ok := strings.CutPrefix(rest, ".parameters"); ok {
			rest = ".input_schema" + tail
		}
		return toolLoc(p.tools[i]).String() + dotted(rest)
	case strings.HasPrefix(path, "tool_choice.function.name"):
		return "tool_choice.name"
	case strings.HasPrefix(path, "response_format"):
		rest := strings.TrimPrefix(path, "response_format")
		return p.format + dotted(strings.TrimPrefix(rest, ".json_schema"))
	case path == "reasoning_effort":
		return "output_config.effort"
	case path == "stop" || strings.HasPrefix(path, "stop["):
		return "stop_sequences" + dotted(path[len("stop"):])
	}
	return dotted(path)
}

// partTail is the Anthropic path of what follows a chat part's path: an image's URL and a
// file's data are its block's source.
func partTail(tail string) string {
	for _, m := range [...][2]string{{".image_url.url", ".source.data"}, {".file.file_data", ".source.data"},
		{".file.filename", ".title"}, {".file", ".source"}, {".image_url", ".source"}} {
		if rest, ok := strings.CutPrefix(tail, m[0]); ok {
			return m[1] + dotted(rest)
		}
	}
	return dotted(tail)
}

// callTail is the Anthropic path of what follows a tool call's path: its arguments are
// the tool_use block's input.
func callTail(tail string) string {
	tail = strings.TrimPrefix(tail, ".function")
	if rest, ok := strings.CutPrefix(tail, ".arguments"); ok {
		return ".input" + dotted(rest)
	}
	return dotted(tail)
}

// index reads "N]" at the start of s: N and what follows.
func index(s string) (n int, rest string, ok bool) {
	digits, rest, ok := strings.Cut(s, "]")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.Atoi(digits)
	return n, rest, err == nil && n >= 0
}

// prefixIndex reads prefix and "N]" at the start of s.
func prefixIndex(s, prefix string) (n int, rest string, ok bool) {
	s, ok = strings.CutPrefix(s, prefix)
	if !ok {
		return 0, "", false
	}
	return index(s)
}

// dotted writes a path's indexes the Anthropic way: "messages[2].content[0]" is
// "messages.2.content.0".
func dotted(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '[':
			b.WriteByte('.')
		case ']':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
