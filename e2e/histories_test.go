package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// Names and ids Bedrock refuses ([a-zA-Z0-9_-]{1,64}), as MCP clients and foreign
// providers send them; the client must only ever see its own.
var (
	mcpName   = "fs.read_file"
	longName  = "tool_" + strings.Repeat("x", 75) // 80 characters
	foreignID = "call:" + strings.Repeat("9", 85) // 90 characters
	exact     = `{"n":12345678901234567890,"f":1.5,"s":"日本語 😀 <&>"}`
)

// historyCase is one history a real client sends; the simulator validates every request
// with Bedrock's rules, so a 200 proves the translation was valid.
type historyCase struct {
	name string
	body string
	// check inspects the unary answer.
	check func(t *testing.T, r chatResponse)
}

func tools(names ...string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, `{"type":"function","function":{"name":"`+n+`","description":"d","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}`)
	}
	return `[` + strings.Join(parts, ",") + `]`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var historyCases = []historyCase{
	{
		name: "forced MCP tool name is mapped back",
		body: `{"messages":[{"role":"user","content":"read it"}],"tools":` + tools(mcpName, longName) +
			`,"tool_choice":{"type":"function","function":{"name":"` + mcpName + `"}}}`,
		check: func(t *testing.T, r chatResponse) {
			require.Len(t, r.ToolCalls, 1)
			assert.Equal(t, mcpName, r.ToolCalls[0].Function.Name)
		},
	},
	{
		name: "80-character tool name is mapped back",
		body: `{"messages":[{"role":"user","content":"go"}],"tools":` + tools(mcpName, longName) +
			`,"tool_choice":{"type":"function","function":{"name":"` + longName + `"}}}`,
		check: func(t *testing.T, r chatResponse) {
			require.Len(t, r.ToolCalls, 1)
			assert.Equal(t, longName, r.ToolCalls[0].Function.Name)
		},
	},
	{
		name: "foreign 90-character id, exact numbers and unicode in arguments and results",
		body: `{"messages":[
			{"role":"user","content":"read"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"` + foreignID + `","type":"function","function":{"name":"` + mcpName + `","arguments":` + quote(exact) + `}}]},
			{"role":"tool","tool_call_id":"` + foreignID + `","content":` + quote(exact) + `}],
			"tools":` + tools(mcpName) + `}`,
		check: func(t *testing.T, r chatResponse) {
			assert.Contains(t, *r.Message, `12345678901234567890`, "digits survive")
			assert.Contains(t, *r.Message, `1.5`)
			assert.Contains(t, *r.Message, `日本語 😀 <&>`, "UTF-8 and <&> survive unescaped")
		},
	},
	{
		name: "gollm streaming mode: one assistant message per call, then text, then results",
		body: `{"messages":[
			{"role":"system","content":"sys"},
			{"role":"user","content":"two things"},
			{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"path\":\"x\"}"}}]},
			{"role":"assistant","tool_calls":[{"id":"call_2","type":"function","function":{"name":"b","arguments":""}}]},
			{"role":"assistant","content":"I called both."},
			{"role":"tool","tool_call_id":"call_1","content":"one"},
			{"role":"tool","tool_call_id":"call_2","content":"{\"two\":2}"}],
			"tools":` + tools("a", "b") + `}`,
		check: func(t *testing.T, r chatResponse) {
			assert.Contains(t, *r.Message, "one")
			assert.Contains(t, *r.Message, `{"two":2}`)
		},
	},
	{
		name: "parallel calls answered only in part",
		body: `{"messages":[
			{"role":"user","content":"go"},
			{"role":"assistant","content":"","tool_calls":[
				{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}},
				{"id":"c2","type":"function","function":{"name":"b","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"only the first"}],
			"tools":` + tools("a", "b") + `}`,
		check: func(t *testing.T, r chatResponse) { assert.Contains(t, *r.Message, "only the first") },
	},
	{
		name: "orphan result, system and developer messages mid-way, empty and null content",
		body: `{"messages":[
			{"role":"developer","content":"dev rules"},
			{"role":"user","content":"hi"},
			{"role":"assistant","content":"   "},
			{"role":"system","content":"more rules"},
			{"role":"tool","tool_call_id":"nobody","content":"stray"},
			{"role":"user","content":null},
			{"role":"user","content":[{"type":"text","text":"and now?"}]}],
			"tools":` + tools("a") + `}`,
		check: func(t *testing.T, r chatResponse) { assert.NotEmpty(t, *r.Message) },
	},
	{
		name:  "leading assistant turn",
		body:  `{"messages":[{"role":"assistant","content":"Hello, how can I help?"},{"role":"user","content":"hi"}]}`,
		check: func(t *testing.T, r chatResponse) { assert.Equal(t, "stop", r.FinishReason) },
	},
	{
		name: "history ends with the assistant's tool calls",
		body: `{"messages":[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}],
			"tools":` + tools("a") + `}`,
		check: func(t *testing.T, r chatResponse) { assert.NotEmpty(t, *r.Message) },
	},
	{
		name: "tool_choice none with tool history, stop string, sampling",
		body: `{"messages":[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"done"}],
			"tools":` + tools("a") + `,"tool_choice":"none","stop":"END","max_tokens":500,"temperature":0.2,"top_p":0.9}`,
		check: func(t *testing.T, r chatResponse) { assert.Empty(t, r.ToolCalls) },
	},
	{
		name: "required tool_choice",
		body: `{"messages":[{"role":"user","content":"anything"}],"tools":` + tools("a", "b") + `,"tool_choice":"required"}`,
		check: func(t *testing.T, r chatResponse) {
			require.NotEmpty(t, r.ToolCalls)
			assert.Equal(t, "tool_calls", r.FinishReason)
		},
	},
	{
		name: "image data URL",
		body: `{"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}]}]}`,
		check: func(t *testing.T, r chatResponse) { assert.NotEmpty(t, *r.Message) },
	},
}

func TestHistoriesOverREST(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	for _, tc := range historyCases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			assert.NotContains(t, string(body), `\u`, "no \\u escapes in the answer")
			var r chatResponse
			require.NoError(t, json.Unmarshal(body, &r))
			tc.check(t, r)
		})
	}
	// Tool arguments, tool results and prompt text never reach the log.
	for _, e := range g.logs.AllUntimed() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, secret := range []string{"日本語", "12345678901234567890", "only the first", "I called both", "what is this?"} {
			assert.NotContains(t, line, secret)
		}
	}
}

func TestHistoriesOverGRPC(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := llmgatewayv1.NewChatServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	for _, tc := range historyCases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.Chat(ctx, grpcRequest(t, tc.body))
			require.NoError(t, err)
			// The same checks, on the answer as a REST client would read it.
			var r chatResponse
			msg := resp.GetMessage()
			r.Message = &msg
			for _, c := range resp.GetToolCalls() {
				var tc struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				}
				tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = c.GetId(), "function", c.GetFunction().GetName(), c.GetFunction().GetArguments()
				r.ToolCalls = append(r.ToolCalls, tc)
			}
			r.FinishReason = strings.ToLower(strings.TrimPrefix(resp.GetFinishReason().String(), "FINISH_REASON_"))
			tc.check(t, r)
		})
	}
}

func TestStreamedNamesAreMappedBack(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	body := `{"messages":[{"role":"user","content":"read it"}],"tools":` + tools(mcpName) +
		`,"tool_choice":{"type":"function","function":{"name":"` + mcpName + `"}}}`
	resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	res := readJSONL(t, resp.Body)
	require.Len(t, res.calls, 1)
	assert.Equal(t, mcpName, res.calls[0].name)

	resp = streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?chunked=true", body)
	chunked := readChunked(t, resp.Body)
	require.Len(t, chunked.calls, 1)
	assert.Equal(t, mcpName, chunked.calls[0].Function.Name)
}

// Bad input names the offending field (docs/PROTOCOL.md section 5).
func TestBadHistoriesNameTheField(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	tests := []struct{ body, field string }{
		{`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{not json"}}]}],"tools":` + tools("a") + `}`,
			"messages[1].tool_calls[0].function.arguments"},
		{`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"[1,2]"}}]}],"tools":` + tools("a") + `}`,
			"messages[1].tool_calls[0].function.arguments"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`,
			"messages[0].content[0].image_url.url"},
		{`{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"array"}}}]}`,
			"tools[0].function.parameters"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":` + tools("a") + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`,
			"tool_choice"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, tt.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
			var e struct{ Error, Code string }
			require.NoError(t, json.Unmarshal(body, &e))
			assert.Contains(t, e.Error, tt.field)
			assert.Equal(t, "invalid_argument", e.Code)
		})
	}

	// The same over gRPC.
	conn, err := grpc.NewClient(g.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err = llmgatewayv1.NewChatServiceClient(conn).Chat(ctx, grpcRequest(t, tests[0].body))
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), tests[0].field)
}
