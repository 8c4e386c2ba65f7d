package bedrocksim

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execCommandSchema is Codex's exec_command tool's schema (e2e/testdata/codex), descriptions
// left out: the command is cmd, a string, and the one required property; the numbers are
// integers to Codex, which refuses 1.5 for yield_time_ms.
const execCommandSchema = `{"type":"object","properties":{"cmd":{"type":"string"},"justification":{"type":"string"},"login":{"type":"boolean"},"max_output_tokens":{"type":"number"},"prefix_rule":{"type":"array","items":{"type":"string"}},"sandbox_permissions":{"type":"string","enum":["use_default","require_escalated"]},"shell":{"type":"string"},"tty":{"type":"boolean"},"workdir":{"type":"string"},"yield_time_ms":{"type":"number"}},"required":["cmd"],"additionalProperties":false}`

// TestBuildAnswerCallsCodexExecCommand is a Codex turn as the gateway translates it: the
// environment context (a user message of its own, merged into the turn) and the user's
// words, which name exec_command and quote the command, with Codex's function tools and a
// namespace's, flattened. The model calls exec_command alone with {"cmd": <the command>},
// none of the optional numbers Codex would refuse, then says what came back; a second turn
// quoting another command calls it again.
func TestBuildAnswerCallsCodexExecCommand(t *testing.T) {
	t.Parallel()
	spec := func(name, schema string) toolEntry {
		return toolEntry{ToolSpec: &toolSpecification{Name: name, InputSchema: toolInputSchema{JSON: jsontext.Value(schema)}}}
	}
	context := "<environment_context>\n  <cwd>/home/user/project</cwd>\n  <shell>bash</shell>\n</environment_context>"
	words := "Use exec_command to run `echo first > notes.txt`"
	req := &converseRequest{
		Messages: []message{{Role: roleUser, Content: []contentBlock{{Text: &context}, {Text: &words}}}},
		ToolConfig: &toolConfiguration{Tools: []toolEntry{
			spec("exec_command", execCommandSchema),
			spec("write_stdin", `{"type":"object","properties":{"chars":{"type":"string"},"session_id":{"type":"number"}},"required":["session_id"],"additionalProperties":false}`),
			spec("view_image", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
			spec("multi_agent_v1__spawn_agent", `{"type":"object","properties":{"message":{"type":"string"}},"additionalProperties":false}`),
		}},
	}
	m := models["anthropic.claude-sonnet-4-20250514-v1:0"]
	a := buildAnswer(m, req, []byte("turn 1"))
	require.Len(t, a.Calls, 1, "only the tool the user's own words name")
	assert.Equal(t, "exec_command", a.Calls[0].Name)
	assert.JSONEq(t, `{"cmd":"echo first > notes.txt"}`, string(a.Calls[0].Input))
	assert.Equal(t, stopToolUse, a.StopReason)

	output := "Chunk ID: 0c0494\nWall time: 0.5725 seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n"
	req.Messages = append(req.Messages, a.message(), message{Role: roleUser, Content: []contentBlock{{ToolResult: &toolResultBlock{
		ToolUseID: a.Calls[0].ID, Content: []toolResultContent{{Text: &output}},
	}}}})
	a = buildAnswer(m, req, []byte("turn 1, result"))
	assert.Empty(t, a.Calls)
	assert.Contains(t, a.Text, "Tool results received: exec_command → Chunk ID: 0c0494")
	assert.Equal(t, stopEndTurn, a.StopReason)

	again := "Now use exec_command to run `mv notes.txt done.txt`"
	req.Messages = append(req.Messages, a.message(), message{Role: roleUser, Content: []contentBlock{{Text: &again}}})
	a = buildAnswer(m, req, []byte("turn 2"))
	require.Len(t, a.Calls, 1)
	assert.Equal(t, "exec_command", a.Calls[0].Name)
	assert.JSONEq(t, `{"cmd":"mv notes.txt done.txt"}`, string(a.Calls[0].Input))
}
