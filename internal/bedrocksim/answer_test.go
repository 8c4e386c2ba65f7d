package bedrocksim

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExampleArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want string }{
		{"no properties", `{"type":"object"}`, `{}`},
		{"empty properties", `{"type":"object","properties":{}}`, `{}`},
		{"order kept", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"},"m":{"type":"number"},"b":{"type":"boolean"}}}`,
			`{"z":"example","a":42,"m":1.5,"b":true}`},
		{"enum and const", `{"type":"object","properties":{"unit":{"type":"string","enum":["c","f"]},"n":{"enum":[3,4]},"k":{"const":{"x":1}}}}`,
			`{"unit":"c","n":3,"k":{"x":1}}`},
		{"formats", `{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"on":{"type":"string","format":"date"},"mail":{"type":"string","format":"email"}}}`,
			`{"at":"2025-01-01T12:00:00Z","on":"2025-01-01","mail":"example"}`},
		{"nested", `{"type":"object","properties":{"filter":{"type":"object","properties":{"tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}}}}}}}`,
			`{"filter":{"tags":[{"k":"example"}]}}`},
		{"type list", `{"type":"object","properties":{"n":{"type":["null","integer"]}}}`, `{"n":42}`},
		{"anyOf", `{"type":"object","properties":{"v":{"anyOf":[{"type":"number"},{"type":"string"}]}}}`, `{"v":1.5}`},
		{"no type", `{"type":"object","properties":{"v":{"description":"anything"}}}`, `{"v":"example"}`},
		{"untyped object", `{"type":"object","properties":{"v":{"properties":{"w":{"type":"boolean"}}}}}`, `{"v":{"w":true}}`},
		{"required without property", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a","b"]}`, `{"a":42,"b":"example"}`},
		{"array without items", `{"type":"object","properties":{"l":{"type":"array"}}}`, `{"l":["example"]}`},
		{"unicode and html keys", `{"type":"object","properties":{"<ü>":{"type":"string"}}}`, `{"<ü>":"example"}`},
		{"not an object", `"nope"`, `{}`},
		{"null", `null`, `{}`},
		{"duplicate property", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}}}`, `{"a":"example"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := exampleArgs(jsontext.Value(tc.schema))
			assert.Equal(t, tc.want, string(got))
			assert.True(t, jsontext.Value(got).IsValid())
		})
	}
}

func TestExampleArgsDeep(t *testing.T) {
	t.Parallel()
	schema := strings.Repeat(`{"type":"object","properties":{"a":`, 100) + `{"type":"string"}` + strings.Repeat(`}}`, 100)
	got := exampleArgs(jsontext.Value(schema))
	assert.True(t, jsontext.Value(got).IsValid(), string(got))
}

func TestSplitText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"Hi", "abc", "Hello", "Hello world", "I'll call get_weather.", "héé", "a😀b", "Supercalifragilisticexpialidocious and more", "日本語のテキストです"} {
		frags := splitText(s)
		assert.Equal(t, s, strings.Join(frags, ""), s)
		if utf8.RuneCountInString(s) >= 3 {
			assert.GreaterOrEqual(t, len(frags), 3, s)
		}
		for _, f := range frags {
			assert.True(t, utf8.ValidString(f), "%q", f)
			assert.NotEmpty(t, f)
		}
	}
}

func TestSplitJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`{"a":1}`, `{"location":"example","unit":"celsius"}`, `{"ü":"日本語"}`} {
		frags := splitJSON(s)
		assert.Equal(t, s, strings.Join(frags, ""))
		assert.GreaterOrEqual(t, len(frags), 2, s)
		for _, f := range frags {
			assert.True(t, utf8.ValidString(f), "%q", f)
		}
	}
}

func TestMentions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text, name string
		want       bool
	}{
		{"use get_weather now", "get_weather", true},
		{"get_weather.", "get_weather", true},
		{"(get_weather)", "get_weather", true},
		{"get_weather_v2", "get_weather", false},
		{"get-weather", "get", false},
		{"budget", "get", false},
		{"budget get", "get", true},
		{"Get_Weather", "get_weather", false},
		{"", "get", false},
		{"x", "", false},
	} {
		assert.Equal(t, tc.want, mentions(tc.text, tc.name), "%q in %q", tc.name, tc.text)
	}
}

func TestBuildAnswerMaxTokensUTF8(t *testing.T) {
	t.Parallel()
	one, text := int32(1), "ü"
	req := &converseRequest{
		Messages:        []message{{Role: "user", Content: []contentBlock{{Text: &text}}}},
		InferenceConfig: &inferenceConfiguration{MaxTokens: &one},
	}
	a := buildAnswer(models["anthropic.claude-sonnet-4-20250514-v1:0"], req, []byte("body"))
	assert.Equal(t, stopMaxTokens, a.StopReason)
	assert.Equal(t, "Hell", a.Text)
	assert.True(t, utf8.ValidString(a.Text))
}

func TestToolUseID(t *testing.T) {
	t.Parallel()
	a, b := toolUseID([]byte("x"), 0), toolUseID([]byte("x"), 1)
	assert.Regexp(t, `^tooluse_[A-Za-z0-9]{22}$`, a)
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, toolUseID([]byte("x"), 0))
	assert.NotEqual(t, a, toolUseID([]byte("y"), 0))
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	f, err := ParseFault("stream_exception,times=2,exception=modelStreamErrorException,after=5,mode=stream")
	require.NoError(t, err)
	require.NotNil(t, f.Stream)
	assert.Equal(t, Fault{Kind: FaultStreamException, Times: 2, ExceptionType: "modelStreamErrorException", AfterEvents: 5, Stream: f.Stream}, f)
	assert.True(t, *f.Stream)
	f, err = ParseFault("throttle")
	require.NoError(t, err)
	assert.Equal(t, Fault{Kind: FaultThrottle}, f)
	f, err = ParseFault("unavailable,model=us.anthropic.claude-sonnet-4-20250514-v1:0,region=eu-west-1,times=1")
	require.NoError(t, err)
	assert.Equal(t, Fault{Kind: FaultUnavailable, Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", Region: "eu-west-1", Times: 1}, f)
	for _, bad := range []string{"", "explode", "throttle,times=x", "hang,mode=both", "truncate,color=red", "throttle,model=", "throttle,region="} {
		_, err := ParseFault(bad)
		assert.Error(t, err, bad)
	}
}

func TestTurnPartsLeavesTaggedContextOut(t *testing.T) {
	t.Parallel()
	turn := func(texts ...string) message {
		m := message{Role: roleUser}
		for _, s := range texts {
			m.Content = append(m.Content, contentBlock{Text: &s})
		}
		return m
	}
	for _, tc := range []struct {
		name string
		turn message
		want string
	}{
		{"one block", turn("Use get_weather"), "Use get_weather"},
		{"reminders before the words", turn("<system-reminder>\nThe Agent and Skill tools are here.\n</system-reminder>\n", "Use the Bash tool"), "Use the Bash tool"},
		{"reminders after the words", turn("run it", "  <context>x</context>  "), "run it"},
		{"only tagged blocks", turn("<a>one</a>", "<b>two</b>"), "<a>one</a>\n<b>two</b>"},
		{"a tag inside the words", turn("<b>bold</b> and more", "<x>y</x>"), "<b>bold</b> and more"},
		{"mismatched tags", turn("<a>one</b>", "<x>y</x>"), "<a>one</b>"},
		{"not a name", turn("<a b>one</a b>", "<x>y</x>"), "<a b>one</a b>"},
		{"an empty element is one", turn("<a></a>", "words"), "words"},
		{"an opening tag alone is not", turn("<ab>", "<x>y</x>"), "<ab>"},
		{"elements that end a block", turn("run it\n\n<a>\n<b>1</b>\n</a>\n<c>2</c>\n"), "run it"},
		{"an element inside a line stays", turn("run <a>it</a>"), "run <a>it</a>"},
		{"an element before the words stays", turn("<a>x</a>\nrun it"), "<a>x</a>\nrun it"},
	} {
		got, _ := turnParts(tc.turn)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestQuoted(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"run `ls -la` now":                 "ls -la",
		"first `a`, then `b`":              "a",
		"```\necho hi > x.txt\n```":        "echo hi > x.txt",
		"no quote":                         "",
		"an open ` quote":                  "",
		"``":                               "",
		"Use the Bash tool to run ` pwd `": "pwd",
	} {
		assert.Equal(t, want, quoted(text), text)
	}
}

// bashSchema is Claude Code's Bash tool's schema (e2e/testdata/claude-code), descriptions
// left out.
const bashSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"description":{"type":"string"},"run_in_background":{"type":"boolean"},"dangerouslyDisableSandbox":{"type":"boolean"}},"required":["command"],"additionalProperties":false}`

func TestQuotedArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want string }{
		{"Claude Code's Bash", bashSchema, `{"command":"touch hello.txt"}`},
		{"first required string", `{"type":"object","properties":{"n":{"type":"integer"},"mode":{"type":"string","enum":["a","b"]},"path":{"type":"string"},"text":{"type":"string"}},"required":["mode","n","text","path"]}`,
			`{"n":42,"mode":"a","path":"touch hello.txt","text":"example"}`},
		{"no required string", `{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}},"required":["n"]}`, `{"n":42}`},
		{"nested strings keep their example", `{"type":"object","properties":{"o":{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}},"required":["o"]}`, `{"o":{"s":"example"}}`},
		{"no required", `{"type":"object","properties":{"s":{"type":"string"}}}`, `{}`},
		{"not an object", `[]`, `{}`},
	} {
		got := quotedArgs(jsontext.Value(tc.schema), "touch hello.txt")
		assert.Equal(t, tc.want, string(got), tc.name)
		assert.True(t, jsontext.Value(got).IsValid(), tc.name)
	}
}

// TestBuildAnswerCallsTheToolTheUserNames is a Claude Code turn: reminders that name most of
// the offered tools, then the user's words, which name one and quote its command. The model
// calls that tool alone, with the command, then says what came back.
func TestBuildAnswerCallsTheToolTheUserNames(t *testing.T) {
	t.Parallel()
	spec := func(name, schema string) toolEntry {
		return toolEntry{ToolSpec: &toolSpecification{Name: name, InputSchema: toolInputSchema{JSON: jsontext.Value(schema)}}}
	}
	reminder := "<system-reminder>\nThe Agent tool starts agents; the Skill tool loads skills; Read reads files.\n</system-reminder>\n"
	words := "Use the Bash tool to run `touch hello.txt`"
	tc := &toolConfiguration{Tools: []toolEntry{
		spec("Agent", `{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`),
		spec("Bash", bashSchema),
		spec("Read", `{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`),
		spec("Skill", `{"type":"object","properties":{"skill":{"type":"string"}},"required":["skill"]}`),
	}}
	req := &converseRequest{
		Messages:   []message{{Role: roleUser, Content: []contentBlock{{Text: &reminder}, {Text: &words}}}},
		ToolConfig: tc,
	}
	m := models["anthropic.claude-sonnet-4-20250514-v1:0"]
	a := buildAnswer(m, req, []byte("turn 1"))
	require.Len(t, a.Calls, 1, "only the tool the user's own words name")
	assert.Equal(t, "Bash", a.Calls[0].Name)
	assert.JSONEq(t, `{"command":"touch hello.txt"}`, string(a.Calls[0].Input))
	assert.Equal(t, stopToolUse, a.StopReason)

	// As Claude Code sends it: a reminder after the command's output.
	output := "(Bash completed with no output)\n\n<system-reminder>\n<total_tokens>14978036 tokens left</total_tokens>\n</system-reminder>"
	usage := "<system-reminder>more</system-reminder>"
	req.Messages = append(req.Messages, a.message(), message{Role: roleUser, Content: []contentBlock{{ToolResult: &toolResultBlock{
		ToolUseID: a.Calls[0].ID, Content: []toolResultContent{{Text: &output}, {Text: &usage}},
	}}}})
	a = buildAnswer(m, req, []byte("turn 2"))
	assert.Empty(t, a.Calls)
	assert.Equal(t, "Tool results received: Bash → (Bash completed with no output)", a.Text)
	assert.Equal(t, stopEndTurn, a.StopReason)
}
