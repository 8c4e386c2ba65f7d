package responses

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nirmata/llm-gateway/internal/fault"
)

// The translator and the core name a refused field by its path in the chat model's REST
// body ("messages[4].tool_calls[0].function.arguments"); a Responses client sent items
// and flattened tools. paths keeps where each chat message and tool came from, so a
// refusal names the field the client wrote ("input[7].arguments").

// origin is where a chat message came from: an input item (its index), the instructions
// or the input string; an assistant turn's tool calls each from an item of their own.
type origin struct {
	item int
	// field holds the message's parts: "content", or "output" for a tool output.
	field string
	calls []int
}

// Origins that are not an item of the request's input.
const (
	fromInstructions = -1
	fromString       = -2
	// fromPrevious: an item of the stored conversation previous_response_id continues.
	fromPrevious = -3
)

// paths are a call's chat messages' and tools' origins, by index.
type paths struct {
	messages []origin
	tools    []string
}

// renames are the chat model's top-level fields Responses names otherwise, longest first.
var renames = [...]struct{ from, to string }{
	{"tool_choice.allowed_tools.tools", "tool_choice.tools"},
	{"tool_choice.allowed_tools", "tool_choice"},
	{"tool_choice.function.name", "tool_choice.name"},
	{"response_format.json_schema", "text.format"},
	{"response_format", "text.format"},
	{"reasoning_effort", "reasoning.effort"},
	{"max_tool_rounds", "max_tool_calls"},
	{"max_tokens", "max_output_tokens"},
}

// partFields are a part's fields in the chat model and as Responses names them.
var partFields = strings.NewReplacer(".image_url.url", ".image_url", ".file.file_data", ".file_data",
	".file.filename", ".filename", ".file.file_id", ".file_id")

// rewrite is the Responses path of a chat-model path; a path it does not know stays.
func (p *paths) rewrite(param string) string {
	if param == "messages" {
		return "input"
	}
	if n, rest, ok := indexed(param, "messages["); ok && n < len(p.messages) {
		return p.messages[n].rewrite(rest)
	}
	if n, rest, ok := indexed(param, "tools["); ok && n < len(p.tools) {
		return p.tools[n] + strings.TrimPrefix(rest, ".function")
	}
	for _, r := range renames {
		if rest, ok := strings.CutPrefix(param, r.from); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return r.to + rest
		}
	}
	return param
}

// rewrite is the path of rest (".tool_calls[0].function.name") in the item o names.
func (o origin) rewrite(rest string) string {
	base := "input[" + strconv.Itoa(o.item) + "]"
	switch o.item {
	case fromInstructions:
		return "instructions"
	case fromString:
		return "input"
	case fromPrevious:
		return "previous_response_id"
	}
	if k, sub, ok := indexed(rest, ".tool_calls["); ok && k < len(o.calls) {
		if o.calls[k] < 0 {
			return "previous_response_id"
		}
		base = "input[" + strconv.Itoa(o.calls[k]) + "]"
		switch {
		case strings.HasPrefix(sub, ".function.name"):
			return base + ".name" + sub[len(".function.name"):]
		case strings.HasPrefix(sub, ".function.arguments"):
			return base + ".arguments" + sub[len(".function.arguments"):]
		case strings.HasPrefix(sub, ".id"):
			return base + ".call_id" + sub[len(".id"):]
		}
		return base + strings.TrimPrefix(sub, ".function")
	}
	if sub, ok := strings.CutPrefix(rest, ".tool_call_id"); ok {
		return base + ".call_id" + sub
	}
	if sub, ok := strings.CutPrefix(rest, ".content"); ok {
		return base + "." + o.field + partFields.Replace(sub)
	}
	return base + rest
}

// indexed reads "<prefix>N]rest" into N and rest.
func indexed(s, prefix string) (int, string, bool) {
	s, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, "", false
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, "", false
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, s[end+1:], true
}

// named is err with the field it refuses named as the client wrote it.
func (c *call) named(err error) error {
	var re *fault.RequestError
	if !errors.As(err, &re) || re.Param == "" {
		return err
	}
	param := c.paths.rewrite(re.Param)
	if param == re.Param {
		return err
	}
	msg := re.Msg
	if rest, ok := strings.CutPrefix(msg, re.Param); ok {
		msg = param + rest
	}
	return &fault.RequestError{Err: re.Err, Param: param, Reason: re.Reason, Msg: msg}
}

// notFoundError is a reference to something the gateway does not have: a stored response
// or item (it stores none yet). OpenAI's error code is not_found, its param the field.
type notFoundError struct{ param, msg string }

func notFound(param, format string, args ...any) error {
	return &notFoundError{param: param, msg: fmt.Sprintf(format, args...)}
}

func (e *notFoundError) Error() string { return e.msg }

// Failure implements [fault.Classified].
func (e *notFoundError) Failure() fault.Failure {
	return fault.Failure{Kind: fault.KindNotFound, Message: e.msg, Param: e.param, Reason: codeNotFound}
}

const codeNotFound = "not_found"
