package bedrocksim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answerFor validates body for model and builds its answer, as the Server does without faults.
func answerFor(t *testing.T, model, body string) answer {
	t.Helper()
	m, found := lookupModel(model)
	require.True(t, found, model)
	req, err := decodeRequest([]byte(body))
	if err == nil {
		err = validate(m, req, false)
	}
	require.Nil(t, err, "%v", err)
	return buildAnswer(m, req, []byte(body))
}

func callNames(a answer) []string {
	var names []string
	for _, c := range a.Calls {
		names = append(names, c.Name)
	}
	return names
}

// errorResult is a toolResult block with status error and text.
func errorResult(id, text string) string {
	return `{"toolResult":{"toolUseId":"` + id + `","content":[{"text":` + string(marshal(text)) + `}],"status":"error"}}`
}

// callTurn is an assistant turn calling each name with id tooluse_<name><suffix>.
func callTurn(suffix string, names ...string) string {
	var blocks []string
	for _, n := range names {
		blocks = append(blocks, `{"toolUse":{"toolUseId":"tooluse_`+n+suffix+`","name":"`+n+`","input":{}}}`)
	}
	return assistant(blocks...)
}

const (
	twoTools = `"toolConfig":{"tools":[` + weather + `,{"toolSpec":{"name":"get_time","inputSchema":{"json":{"type":"object"}}}}]}`
	invalidW = "Invalid arguments for get_weather: /city: expected string, got integer. Call get_weather again with corrected arguments."
	notRun   = "Not run: other calls in this turn had invalid arguments. Repeat this call if it is still needed."
)

// TestRetries: after a tool-result turn with errors the model calls the failed tools again:
// once after any error, and whenever the result asks for it, as the gateway's repair turn
// does; with parallel calls on as with them off.
func TestRetries(t *testing.T) {
	t.Parallel()
	task := user(`{"text":"Use get_weather and get_time."}`)
	ok := func(id string) string { return `{"toolResult":{"toolUseId":"` + id + `","content":[{"text":"fine"}]}}` }
	noParallel := fields(`"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`)
	for _, tc := range []struct {
		name, body string
		calls      []string // nil: a text answer
		text       string
	}{
		{"a failed tool once more", reqWith(twoTools, task, callTurn("1", "get_weather", "get_time"), user(errorResult("tooluse_get_weather1", "timeout"), ok("tooluse_get_time1"))),
			[]string{"get_weather"}, "I'll call get_weather again."},
		{"a second failure is quoted", reqWith(twoTools, task, callTurn("1", "get_weather", "get_time"), user(errorResult("tooluse_get_weather1", "timeout"), ok("tooluse_get_time1")),
			callTurn("2", "get_weather"), user(errorResult("tooluse_get_weather2", "timeout again"))),
			nil, "Tool results received: get_weather → timeout again (error)"},
		{"repair: invalid and not run", reqWith(twoTools, task, callTurn("1", "get_weather", "get_time"), user(errorResult("tooluse_get_weather1", invalidW), errorResult("tooluse_get_time1", notRun))),
			[]string{"get_weather", "get_time"}, "I'll call get_weather and get_time again."},
		{"repair after earlier attempts", reqWith(twoTools, task, callTurn("1", "get_weather"), user(errorResult("tooluse_get_weather1", invalidW)),
			callTurn("2", "get_weather"), user(errorResult("tooluse_get_weather2", invalidW))),
			[]string{"get_weather"}, "I'll call get_weather again."},
		{"a forced tool only", reqWith(`"toolConfig":{"tools":[`+weather+`,`+spec("get_time")+`],"toolChoice":{"tool":{"name":"get_time"}}}`, task,
			callTurn("1", "get_weather", "get_time"), user(errorResult("tooluse_get_weather1", invalidW), errorResult("tooluse_get_time1", notRun))),
			[]string{"get_time"}, "I'll call get_time again."},
		{"a tool no longer offered", reqWith(tools(spec("get_time")), task, callTurn("1", "get_weather"), user(errorResult("tooluse_get_weather1", invalidW))),
			nil, "Tool results received: get_weather → " + invalidW + " (error)"},
		{"one at a time: repair after earlier attempts", reqWith(join(twoTools, noParallel), task, callTurn("1", "get_weather"), user(errorResult("tooluse_get_weather1", invalidW)),
			callTurn("2", "get_weather"), user(errorResult("tooluse_get_weather2", invalidW))),
			[]string{"get_weather"}, "I'll call get_weather again."},
		{"one at a time: a second failure moves on", reqWith(join(twoTools, noParallel), task, callTurn("1", "get_weather"), user(errorResult("tooluse_get_weather1", "timeout")),
			callTurn("2", "get_weather"), user(errorResult("tooluse_get_weather2", "timeout"))),
			[]string{"get_time"}, "I'll call get_time."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := answerFor(t, sonnet4, tc.body)
			assert.Equal(t, tc.calls, callNames(a))
			assert.Equal(t, tc.text, a.Text)
		})
	}
}

func TestParseFaultInvalidToolArgs(t *testing.T) {
	t.Parallel()
	f, err := ParseFault("invalid_tool_args,times=2,mode=unary")
	require.NoError(t, err)
	require.NotNil(t, f.Stream)
	assert.Equal(t, Fault{Kind: FaultInvalidToolArgs, Times: 2, Stream: f.Stream}, f)
	assert.Contains(t, FaultKinds, FaultInvalidToolArgs)
	assert.Contains(t, FaultHelp, "invalid_tool_args")
}

// TestBreakArgs: the fault's arguments break the schema, the same way every time: a required
// property removed, else a property of the wrong type.
func TestBreakArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want, violation string }{
		{"required removed", weatherSchema, `{"unit":"celsius","days":42,"when":"2025-01-01T12:00:00Z","detailed":true}`, `/: missing required property "location"`},
		{"first required", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["x","b","a"]}`, `{"a":"example","b":"example"}`, `/: missing required property "x"`},
		{"integer gets a string", `{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}}}`, `{"n":"example","s":"example"}`, "/n: expected integer, got string"},
		{"string gets a number", `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"integer"}}}`, `{"s":42,"n":42}`, "/s: expected string, got float64"},
		{"boolean gets a string", `{"type":"object","properties":{"b":{"type":"boolean"}}}`, `{"b":"example"}`, "/b: expected boolean, got string"},
		{"nullable number", `{"type":"object","properties":{"x":{"type":["number","null"]}}}`, `{"x":"example"}`, "/x: expected number or null, got string"},
		{"untyped skipped", `{"type":"object","properties":{"v":{"enum":["a"]},"o":{"type":"object"}}}`, `{"v":"a","o":"example"}`, "/o: expected object, got string"},
		{"$ref followed", `{"type":"object","$defs":{"n":{"type":"number"}},"properties":{"x":{"$ref":"#/$defs/n"}}}`, `{"x":"example"}`, "/x: expected number, got string"},
		{"string or number: nothing", `{"type":"object","properties":{"x":{"type":["string","number"]}}}`, "", ""},
		{"no properties: nothing", `{"type":"object"}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := exampleArgs(jsontext.Value(tc.schema))
			require.Empty(t, violations(t, tc.schema, string(args)), "the example is valid")
			got := breakArgs(jsontext.Value(tc.schema), args)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, []string{tc.violation}, violations(t, tc.schema, string(got)))
		})
	}
}

// faultyConverse is one Converse call of a tool test: the task names the tools, tools
// are offered as given.
func faultyConverse(t *testing.T, client *bedrockruntime.Client, model string, msgs []types.Message, tc *types.ToolConfiguration) (types.Message, types.StopReason) {
	t.Helper()
	out, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: msgs, ToolConfig: tc})
	require.NoError(t, err)
	return outputMessage(t, out), out.StopReason
}

// firstCall is the first toolUse block of msg and its input as JSON.
func firstCall(t *testing.T, msg types.Message) (types.ToolUseBlock, string) {
	t.Helper()
	for _, b := range msg.Content {
		if use, ok := b.(*types.ContentBlockMemberToolUse); ok {
			raw, err := use.Value.Input.MarshalSmithyDocument()
			require.NoError(t, err)
			return use.Value, string(raw)
		}
	}
	t.Fatalf("no tool call in %#v", msg.Content)
	return types.ToolUseBlock{}, ""
}

// TestInvalidToolArgsTimes: times counts only answers that call a tool whose arguments the
// fault can break; requests refused, faulted before an answer, answered in text, or calling
// only strict tools use up nothing.
func TestInvalidToolArgsTimes(t *testing.T) {
	t.Parallel()
	sim := New(Options{Faults: []Fault{{Kind: FaultThrottle, Times: 1}, {Kind: FaultInvalidToolArgs, Times: 2}}})
	client, _ := startSim(t, sim)
	weatherTool := toolConfig(tool("get_weather", weatherSchema))
	strict := toolConfig(&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name:        aws.String("get_weather"),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(jsonMap(weatherSchema))},
		Strict:      aws.Bool(true),
	}})
	call := []types.Message{userText("Use get_weather.")}

	_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: call, ToolConfig: weatherTool})
	assert.Equal(t, "ThrottlingException", errorCode(t, err), "the throttle comes first, and no answer is counted")
	_, err = client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: []types.Message{}})
	require.Error(t, err, "a refused request")
	msg, _ := faultyConverse(t, client, claude, []types.Message{userText("Hi")}, weatherTool)
	require.Len(t, msg.Content, 1, "a text answer")
	msg, _ = faultyConverse(t, client, sonnet45, call, strict)
	_, input := firstCall(t, msg)
	assert.Empty(t, violations(t, weatherSchema, input), "a strict tool's call follows its schema")

	for i := range 2 {
		msg, stop := faultyConverse(t, client, claude, call, weatherTool)
		assert.Equal(t, types.StopReasonToolUse, stop)
		_, input := firstCall(t, msg)
		assert.Equal(t, []string{`/: missing required property "location"`}, violations(t, weatherSchema, input), "answer %d", i+1)
	}
	msg, _ = faultyConverse(t, client, claude, call, weatherTool)
	_, input = firstCall(t, msg)
	assert.Empty(t, violations(t, weatherSchema, input), "times spent")
}

func jsonMap(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

// TestInvalidToolArgsStream: streamed calls are broken the same way, and mode limits the fault.
func TestInvalidToolArgsStream(t *testing.T) {
	t.Parallel()
	streamOnly := true
	sim := New(Options{Faults: []Fault{{Kind: FaultInvalidToolArgs, Stream: &streamOnly}}})
	client, _ := startSim(t, sim)
	tc := toolConfig(tool("get_weather", weatherSchema), tool("get_time", timeSchema))
	msgs := []types.Message{userText("Use get_weather and get_time.")}

	msg, _ := faultyConverse(t, client, claude, msgs, tc)
	_, input := firstCall(t, msg)
	assert.Empty(t, violations(t, weatherSchema, input), "the fault is for streams only")

	out, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: msgs, ToolConfig: tc})
	require.NoError(t, err)
	s := collect(t, out)
	require.NoError(t, s.err)
	require.Len(t, s.tools, 2)
	assert.Equal(t, []string{`/: missing required property "location"`}, violations(t, weatherSchema, strings.Join(s.tools[0].fragments, "")))
	// The SDK's document sorts the schema's keys: offset is the first property.
	assert.Equal(t, []string{"/offset: expected number, got string"}, violations(t, timeSchema, strings.Join(s.tools[1].fragments, "")), "every call of the answer")
}

// TestInvalidToolArgsRepair runs the gateway's repair loop (docs/PROTOCOL.md 13.2) against the
// fault: each attempt resends the task with the latest attempt's turn and one error result per
// call; the attempt after the fault's times is spent gets valid arguments for the same tools.
func TestInvalidToolArgsRepair(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		times      int
		keepAll    bool // carry every attempt, not only the latest
		noParallel bool
	}{
		{"times 1", 1, false, false},
		{"times 2", 2, false, false},
		{"times 2, every attempt carried", 2, true, false},
		{"times 2, one call at a time", 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultInvalidToolArgs, Times: tc.times}}}))
			tools := toolConfig(tool("get_weather", weatherSchema), tool("get_time", `{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}`))
			schemas := map[string]string{"get_weather": weatherSchema, "get_time": `{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}`}
			var extra document.Interface
			if tc.noParallel {
				extra = noParallel(true)
			}
			task := []types.Message{userText("Use get_weather and get_time.")}
			send := func(msgs []types.Message) types.Message {
				out, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: msgs, ToolConfig: tools, AdditionalModelRequestFields: extra})
				require.NoError(t, err)
				require.Equal(t, types.StopReasonToolUse, out.StopReason)
				return outputMessage(t, out)
			}
			msgs := task
			answer := send(msgs)
			var first []string
			for attempt := 0; ; attempt++ {
				var names []string
				var results []types.ContentBlock
				invalid := false
				for _, b := range answer.Content {
					use, ok := b.(*types.ContentBlockMemberToolUse)
					if !ok {
						continue
					}
					raw, err := use.Value.Input.MarshalSmithyDocument()
					require.NoError(t, err)
					names = append(names, *use.Value.Name)
					text := "Not run: other calls in this turn had invalid arguments. Repeat this call if it is still needed."
					if v := violations(t, schemas[*use.Value.Name], string(raw)); len(v) > 0 {
						invalid = true
						text = fmt.Sprintf("Invalid arguments for %s: %s. Call %s again with corrected arguments.", *use.Value.Name, strings.Join(v, "; "), *use.Value.Name)
					}
					results = append(results, &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
						ToolUseId: use.Value.ToolUseId, Status: types.ToolResultStatusError,
						Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}}}})
				}
				if first == nil {
					first = names
				}
				assert.Equal(t, first, names, "attempt %d calls the same tools", attempt)
				if !invalid {
					assert.Equal(t, tc.times, attempt, "valid once the fault's times are spent")
					return
				}
				require.Less(t, attempt, 5, "the repair does not end")
				turn := []types.Message{answer, {Role: types.ConversationRoleUser, Content: results}}
				if tc.keepAll {
					msgs = append(msgs, turn...)
				} else {
					msgs = append(append([]types.Message{}, task...), turn...)
				}
				answer = send(msgs)
			}
		})
	}
}

// TestInvalidToolArgsRaw: the fault through raw HTTP, and the text and stop reason untouched.
func TestInvalidToolArgsRaw(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{Faults: []Fault{{Kind: FaultInvalidToolArgs, Times: 1}}}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	body := reqWith(weatherTC, user(`{"text":"Use get_weather."}`))
	_, got := post(t, url, "/model/"+claude+"/converse", "Bearer k", body)
	a := answerOf(t, got)
	require.Len(t, a.Output.Message.Content, 2)
	assert.Equal(t, "I'll call get_weather.", *a.Output.Message.Content[0].Text)
	assert.Equal(t, `{"city":42}`, string(a.Output.Message.Content[1].ToolUse.Input))
	assert.Equal(t, stopToolUse, a.StopReason)
	_, got = post(t, url, "/model/"+claude+"/converse", "Bearer k", body)
	assert.Equal(t, `{"city":"example"}`, string(answerOf(t, got).Output.Message.Content[1].ToolUse.Input))
}
