package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
	"github.com/nirmata/llm-gateway/internal/toolguard"
)

// propsSchema is an object schema of n string properties: n+1 subschemas.
func propsSchema(n int) []byte {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	return []byte(`{"type":"object","properties":{` + strings.Join(parts, ",") + `}}`)
}

// TestSchemasAreMeasuredFirst: a schema beyond schema_limits is refused before the request
// is translated or reaches Bedrock, naming its field as the surfaces name it (the flat and
// the wrapped tool forms, the response_format schema) and the setting that raises the
// limit.
func TestSchemasAreMeasuredFirst(t *testing.T) {
	t.Parallel()
	limits := toolcheck.Limits{MaxSubschemas: 50, MaxMembers: 20}
	for _, tt := range []struct {
		name  string
		req   chat.Request
		param string
		says  string
	}{
		{"a wrapped tool", chat.Request{Tools: []chat.Tool{{Name: "ok", Wrapped: true}, {Name: "big", Wrapped: true, Parameters: propsSchema(30)}}},
			"tools[1].function.parameters", "tools[1].function.parameters: 30 members in properties at /properties, at most 20 are allowed (schema_limits.max_members)"},
		{"a flat tool", chat.Request{Tools: []chat.Tool{{Name: "big", Parameters: []byte(`{"$defs":{"a":{"$ref":"#/$defs/a"}}}`)}}},
			"tools[0].parameters", "tools[0].parameters: the schema at /$defs/a applies itself again at the same place of the arguments through $ref, without end"},
		{"a number the library would take 25 ms to read", chat.Request{Tools: []chat.Tool{{Name: "n", Parameters: []byte(`{"type":"object","properties":{"p":{"minimum":1e999999}}}`)}}},
			"tools[0].parameters", "tools[0].parameters: a number beyond what the gateway reads at /properties/p/minimum (at most 100 digits, an exponent within ±400)"},
		{"response_format", chat.Request{ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":"object","enum":[` + strings.Repeat("1,", 25) + `1]}`)}},
			"response_format.json_schema.schema", "response_format.json_schema.schema: 26 members in enum at /enum, at most 20 are allowed (schema_limits.max_members)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := &scripted{}
			s := New(u, Options{DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
				UpstreamTimeout: time.Minute, MaxConcurrent: 4, SchemaLimits: limits}, zap.NewNop())
			req := tt.req
			req.Messages = []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
			_, _, err := s.Chat(t.Context(), &req)
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, fault.ReasonInvalidValue, re.Reason)
			assert.Equal(t, "invalid request: "+tt.says, err.Error())
			assert.Empty(t, u.reqs, "Bedrock got nothing")
		})
	}
}

// TestCompileBudget: a request's fresh compiles are bounded by its budget: the calls of a
// tool whose schema would cost more than is left are unchecked (with a warning), while a
// schema the cache holds costs nothing, so the next request checks both.
func TestCompileBudget(t *testing.T) {
	t.Parallel()
	call := func(name string) [2]string { return [2]string{name, `{"p0":1}`} }
	u := &scripted{answers: []any{answer("1", "", "", call("a"), call("b")), answer("2", "", "", call("a"), call("b"))}}
	logs, observed := observer.New(zap.WarnLevel)
	s := New(u, Options{DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4, NoPromptCaching: true,
		SchemaLimits: toolcheck.Limits{CompileBudget: 100}}, zap.New(logs))
	request := func() *chat.Request {
		return &chat.Request{ID: "req", Messages: []chat.Message{{Role: chat.RoleUser, Content: "call a and b"}},
			Tools: []chat.Tool{{Name: "a", Parameters: propsSchema(300)}, {Name: "b", Parameters: propsSchema(301)}}}
	}

	resp, res, err := s.Chat(t.Context(), request())
	require.NoError(t, err)
	assert.NotEmpty(t, resp.ToolCalls[0].ValidationErrors, "a: its request's first compile, checked")
	assert.Nil(t, resp.ToolCalls[1].ValidationErrors, "b: over the budget, unchecked")
	assert.Equal(t, toolguard.Outcomes{Invalid: 1, Unchecked: 1}, res.ToolOutcomes)
	warned := observed.FilterMessageSnippet("compile budget").All()
	require.Len(t, warned, 1)
	assert.Equal(t, "b", warned[0].ContextMap()["tool"])

	_, res, err = s.Chat(t.Context(), request())
	require.NoError(t, err)
	assert.Equal(t, toolguard.Outcomes{Invalid: 2}, res.ToolOutcomes, "a from the cache, free; b compiled")
}

// TestSchemaWarningsAreRateLimited: every distinct schema that does not compile is a
// warning, and a client can send any number of them, so they share a rate limit: one line
// every 10 s, counting the ones held back.
func TestSchemaWarningsAreRateLimited(t *testing.T) {
	t.Parallel()
	const n = 200
	var answers []any
	for range n {
		answers = append(answers, answer("1", "", "", [2]string{"t", `{}`}))
	}
	u := &scripted{answers: answers}
	logs, observed := observer.New(zap.WarnLevel)
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(u, Options{DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4, NoPromptCaching: true, Now: clock.Now}, zap.New(logs))
	for i := range n {
		if i == n-1 {
			clock.Advance(10 * time.Second)
		}
		req := &chat.Request{ID: "req", Messages: []chat.Message{{Role: chat.RoleUser, Content: "call t"}},
			Tools: []chat.Tool{{Name: "t", Parameters: fmt.Appendf(nil, `{"type":"object","properties":{"p":{"type":"thing-%d"}}}`, i)}}}
		_, res, err := s.Chat(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, toolguard.Outcomes{Unchecked: 1}, res.ToolOutcomes)
	}
	lines := observed.FilterMessageSnippet("cannot be compiled").All()
	require.Len(t, lines, 2, "the first, then one 10 s later")
	assert.EqualValues(t, 1, lines[0].ContextMap()["warnings"])
	assert.EqualValues(t, n-1, lines[1].ContextMap()["warnings"], "it counts those held back")
}

// TestCostlyCallIsUnchecked: a call whose check would multiply beyond what a check may
// cost (a 95-byte schema applying itself twice to x, arguments nesting x forty deep: 2^40
// evaluations for the library) is unchecked, with a warning, and answered at once.
func TestCostlyCallIsUnchecked(t *testing.T) {
	t.Parallel()
	args := strings.Repeat(`{"x":`, 40) + `{}` + strings.Repeat(`}`, 40)
	u := &scripted{answers: []any{answer("1", "", "", [2]string{"t", args})}}
	logs, observed := observer.New(zap.WarnLevel)
	s := New(u, Options{DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4, NoPromptCaching: true}, zap.New(logs))
	req := &chat.Request{ID: "req", Messages: []chat.Message{{Role: chat.RoleUser, Content: "call t"}}, ToolValidation: "repair",
		Tools: []chat.Tool{{Name: "t", Parameters: []byte(`{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)}}}
	resp, res, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, args, resp.ToolCalls[0].Arguments)
	assert.Equal(t, toolguard.Outcomes{Unchecked: 1}, res.ToolOutcomes)
	assert.Len(t, observed.FilterMessageSnippet("its check would cost too much").All(), 1)
}

// TestUncheckedWarningsAreLimitedApart: each reason a call is not checked has its own rate
// limit, so a client that sends schema after schema that does not compile, filling its
// limit, does not hide the warning of a call whose check would cost too much, nor that of
// a request over its compile budget, in the same 10 s.
func TestUncheckedWarningsAreLimitedApart(t *testing.T) {
	t.Parallel()
	costly := strings.Repeat(`{"x":`, 40) + `{}` + strings.Repeat(`}`, 40)
	answers := []any{}
	for range 20 {
		answers = append(answers, answer("1", "", "", [2]string{"t", `{}`}))
	}
	answers = append(answers, answer("2", "", "", [2]string{"t", costly}), answer("3", "", "", [2]string{"a", `{}`}, [2]string{"b", `{}`}))
	u := &scripted{answers: answers}
	logs, observed := observer.New(zap.WarnLevel)
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(u, Options{DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4, NoPromptCaching: true, Now: clock.Now,
		SchemaLimits: toolcheck.Limits{CompileBudget: 100}}, zap.New(logs))
	chat1 := func(tools ...chat.Tool) toolguard.Outcomes {
		req := &chat.Request{ID: "req", Messages: []chat.Message{{Role: chat.RoleUser, Content: "call"}}, Tools: tools}
		_, res, err := s.Chat(t.Context(), req)
		require.NoError(t, err)
		return res.ToolOutcomes
	}
	for i := range 20 {
		require.Equal(t, toolguard.Outcomes{Unchecked: 1}, chat1(chat.Tool{Name: "t", Parameters: fmt.Appendf(nil, `{"type":"object","properties":{"p":{"type":"thing-%d"}}}`, i)}))
	}
	require.Equal(t, toolguard.Outcomes{Unchecked: 1}, chat1(chat.Tool{Name: "t",
		Parameters: []byte(`{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)}))
	require.Equal(t, toolguard.Outcomes{Valid: 1, Unchecked: 1}, chat1(chat.Tool{Name: "a", Parameters: propsSchema(300)}, chat.Tool{Name: "b", Parameters: propsSchema(301)}))

	assert.Len(t, observed.FilterMessageSnippet("cannot be compiled").All(), 1, "the first of 20")
	assert.Len(t, observed.FilterMessageSnippet("would cost too much").All(), 1)
	assert.Len(t, observed.FilterMessageSnippet("compile budget").All(), 1)
}
