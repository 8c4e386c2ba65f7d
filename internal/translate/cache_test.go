package translate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// translateBody translates a Nirmata body for the model it names, under opts, and returns
// the Converse JSON.
func translateBody(t *testing.T, body string, opts translate.Options) (string, *translate.Plan, error) {
	t.Helper()
	req, _, err := nirmata.DecodeRequest([]byte(body))
	require.NoError(t, err)
	out, names, err := translate.RequestWith(req, capabilities.Lookup(req.Model), opts)
	if err != nil {
		return "", nil, err
	}
	b, err := bedrock.MarshalRequest(out)
	require.NoError(t, err)
	require.NoError(t, validateBody(req.Model, b))
	return string(b), names, nil
}

const (
	eph      = `{"type":"ephemeral"}`
	cp       = `{"cachePoint":{"type":"default"}}`
	cp1h     = `{"cachePoint":{"type":"default","ttl":"1h"}}`
	sonnet4  = `"model":"us.anthropic.claude-sonnet-4-20250514-v1:0"`
	emptyFn  = `"inputSchema":{"json":{"type":"object","properties":{}}}`
	toolF    = `"tools":[{"type":"function","function":{"name":"f"}}]`
	toolFCfg = `"toolConfig":{"tools":[{"toolSpec":{"name":"f",` + emptyFn + `}}]}`
)

// TestCacheHints: each cache_control hint becomes a cachePoint where docs/PROTOCOL.md 12.1
// says, checked against the exact Converse JSON; hints without effect are listed.
func TestCacheHints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
		ignored          []string
		stats            translate.CacheStats
	}{
		{
			name: "system and developer: after each hinted text, after the message's last text",
			body: `{` + sonnet4 + `,"messages":[
				{"role":"system","content":[{"type":"text","text":"A","cache_control":` + eph + `},{"type":"text","text":"B"}],"cache_control":{"type":"ephemeral","ttl":"5m"}},
				{"role":"developer","content":"C","cache_control":` + eph + `},
				{"role":"user","content":"hi"}]}`,
			want:  `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"A"},` + cp + `,{"text":"B"},` + cp + `,{"text":"C"},` + cp + `]}`,
			stats: translate.CacheStats{Hints: 3, Sent: 3},
		},
		{
			name: "user: its own block after the part, after the message; merged messages keep theirs; blank parts and messages take theirs with them",
			body: `{` + sonnet4 + `,"messages":[
				{"role":"user","content":[{"type":"text","text":"A","cache_control":` + eph + `},{"type":"text","text":" ","cache_control":` + eph + `},{"type":"text","text":"C"}],"cache_control":` + eph + `},
				{"role":"user","content":"D","cache_control":` + eph + `},
				{"role":"user","content":" ","cache_control":` + eph + `}]}`,
			want:    `{"messages":[{"role":"user","content":[{"text":"A"},` + cp + `,{"text":"C"},` + cp + `,{"text":"D"},` + cp + `]}]}`,
			ignored: []string{"messages[0].content[1].cache_control", "messages[2].cache_control"},
			stats:   translate.CacheStats{Hints: 3, Sent: 3},
		},
		{
			name: "assistant: after the part, after the message's last call; merged turns keep each point after its own content",
			body: `{` + sonnet4 + `,"messages":[
				{"role":"user","content":"go"},
				{"role":"assistant","content":[{"type":"text","text":"I'll call both.","cache_control":` + eph + `}],
				 "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"cache_control":` + eph + `},
				{"role":"assistant","content":"and more","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}],
				 "cache_control":{"type":"ephemeral","ttl":"1h"}},
				{"role":"assistant","content":" ","cache_control":` + eph + `},
				{"role":"tool","tool_call_id":"c1","content":"r1"},{"role":"tool","tool_call_id":"c2","content":"r2"}],` + toolF + `}`,
			want: `{"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"text":"I'll call both."},` + cp +
				`,{"text":"and more"},{"toolUse":{"toolUseId":"c1","name":"f","input":{}}},` + cp + `,{"toolUse":{"toolUseId":"c2","name":"f","input":{}}},` + cp + `]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"r1"}]}},{"toolResult":{"toolUseId":"c2","content":[{"text":"r2"}]}}]}],` + toolFCfg + `}`,
			// Sonnet 4 has no 1h TTL (rule 2).
			ignored: []string{"messages[3].cache_control", "messages[2].cache_control.ttl"},
			stats:   translate.CacheStats{Hints: 3, Downgraded: 1, Sent: 3},
		},
		{
			name: "tool messages: right after the toolResult, in the order of the calls, never inside it; an orphan's after its text",
			body: `{` + sonnet4 + `,"messages":[
				{"role":"user","content":"go"},
				{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c2","content":"r2","cache_control":` + eph + `},
				{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r1","cache_control":` + eph + `}]},
				{"role":"tool","tool_call_id":"zz","content":"late","cache_control":` + eph + `}],` + toolF + `}`,
			want: `{"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"f","input":{}}},{"toolUse":{"toolUseId":"c2","name":"f","input":{}}}]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"r1"}]}},` + cp + `,{"toolResult":{"toolUseId":"c2","content":[{"text":"r2"}]}},` + cp +
				`,{"text":"Tool result for zz: late"},` + cp + `]}],` + toolFCfg + `}`,
			stats: translate.CacheStats{Hints: 3, Sent: 3},
		},
		{
			name: "a tool message's hints become one point",
			body: `{` + sonnet4 + `,"messages":[{"role":"user","content":"go"},
				{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r","cache_control":` + eph + `}],"cache_control":` + eph + `}],` + toolF + `}`,
			want: `{"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"f","input":{}}}]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"r"}]}},` + cp + `]}],` + toolFCfg + `}`,
			stats: translate.CacheStats{Hints: 2, Merged: 1, Sent: 1},
		},
		{
			name: "tools: an element of its own after the tool, in either form; a tool not offered takes its hint with it",
			body: `{` + sonnet4 + `,"messages":[{"role":"user","content":"go"}],
				"tools":[{"type":"function","function":{"name":"a"},"cache_control":` + eph + `},{"type":"function","function":{"name":"b","cache_control":` + eph + `}},
					{"name":"c","cache_control":` + eph + `},{"name":"d"}],
				"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"b"}},{"type":"function","function":{"name":"d"}}]}}}`,
			want: `{"messages":[{"role":"user","content":[{"text":"go"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"b",` + emptyFn + `}},` + cp +
				`,{"toolSpec":{"name":"d",` + emptyFn + `}}],"toolChoice":{"auto":{}}}}`,
			ignored: []string{"tools[0].cache_control", "tools[2].cache_control"},
			stats:   translate.CacheStats{Hints: 1, Sent: 1},
		},
		{
			name:    "tools not sent at all (tool_choice none, no tool history)",
			body:    `{` + sonnet4 + `,"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"a"},"cache_control":` + eph + `}],"tool_choice":"none"}`,
			want:    `{"messages":[{"role":"user","content":[{"text":"go"}]}]}`,
			ignored: []string{"tools[0].cache_control"},
		},
		{
			name: "Nova: no point in the tools",
			body: `{"model":"us.amazon.nova-pro-v1:0","messages":[{"role":"system","content":"S","cache_control":` + eph + `},{"role":"user","content":"go"}],
				"tools":[{"type":"function","function":{"name":"a"},"cache_control":` + eph + `}]}`,
			want:    `{"messages":[{"role":"user","content":[{"text":"go"}]}],"system":[{"text":"S"},` + cp + `],"toolConfig":{"tools":[{"toolSpec":{"name":"a",` + emptyFn + `}}]}}`,
			ignored: []string{"tools[0].cache_control"},
			stats:   translate.CacheStats{Hints: 2, Unsupported: 1, Sent: 1},
		},
		{
			name:    "a model without prompt caching gets no point",
			body:    `{"model":"meta.llama3-1-70b-instruct-v1:0","messages":[{"role":"system","content":"S","cache_control":` + eph + `},{"role":"user","content":"go","cache_control":` + eph + `}]}`,
			want:    `{"messages":[{"role":"user","content":[{"text":"go"}]}],"system":[{"text":"S"}]}`,
			ignored: []string{"messages[0].cache_control", "messages[1].cache_control"},
			stats:   translate.CacheStats{Hints: 2, Unsupported: 2},
		},
		{
			name: "ttl: 1h kept where the model has it, 5m sent as the default",
			body: `{"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","messages":[{"role":"system","content":"S","cache_control":{"type":"ephemeral","ttl":"1h"}},
				{"role":"user","content":"go","cache_control":{"type":"ephemeral","ttl":"5m"}}]}`,
			want:  `{"messages":[{"role":"user","content":[{"text":"go"},` + cp + `]}],"system":[{"text":"S"},` + cp1h + `]}`,
			stats: translate.CacheStats{Hints: 2, Sent: 2},
		},
		{
			name: "documents: a point right after a document that is not a PDF goes",
			body: `{` + sonnet4 + `,"messages":[{"role":"user","content":[
				{"type":"file","file":{"file_data":"data:text/csv;base64,YSxiCjEsMgo=","filename":"t.csv"},"cache_control":` + eph + `},
				{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0xLjQK","filename":"r.pdf"},"cache_control":` + eph + `}]}]}`,
			want: `{"messages":[{"role":"user","content":[{"document":{"format":"csv","name":"t csv","source":{"bytes":"YSxiCjEsMgo="}}},` +
				`{"document":{"format":"pdf","name":"r pdf","source":{"bytes":"JVBERi0xLjQK"}}},` + cp + `,{"text":"Attached: t csv, r pdf"}]}]}`,
			ignored: []string{"messages[0].content[0].cache_control"},
			stats:   translate.CacheStats{Hints: 2, Misplaced: 1, Sent: 1},
		},
		{
			name: "more than four: the last tools, last system and last two message points",
			body: `{` + sonnet4 + `,"messages":[
				{"role":"system","content":"S1","cache_control":` + eph + `},{"role":"system","content":"S2","cache_control":` + eph + `},
				{"role":"user","content":"u1","cache_control":` + eph + `},{"role":"assistant","content":"a1","cache_control":` + eph + `},
				{"role":"user","content":"u2","cache_control":` + eph + `}],"tools":[{"type":"function","function":{"name":"f"},"cache_control":` + eph + `}]}`,
			want: `{"messages":[{"role":"user","content":[{"text":"u1"}]},{"role":"assistant","content":[{"text":"a1"},` + cp + `]},{"role":"user","content":[{"text":"u2"},` + cp + `]}],` +
				`"system":[{"text":"S1"},{"text":"S2"},` + cp + `],"toolConfig":{"tools":[{"toolSpec":{"name":"f",` + emptyFn + `}},` + cp + `]}}`,
			ignored: []string{"messages[0].cache_control", "messages[2].cache_control"},
			stats:   translate.CacheStats{Hints: 6, OverLimit: 2, Sent: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, names, err := translateBody(t, tt.body, translate.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.ignored, names.Ignored)
			assert.Equal(t, tt.stats, names.Stats.Cache)
		})
	}
}

// TestCacheHintErrors: a hint the gateway cannot honour is a 400 naming its path, from the
// translator, so every surface says the same.
func TestCacheHintErrors(t *testing.T) {
	t.Parallel()
	const user = `{"role":"user","content":"hi"}`
	tests := []struct{ name, body, want, param string }{
		{"message type", `{"messages":[` + user + `,{"role":"user","content":"x","cache_control":{"type":"persistent"}}]}`,
			`invalid request: messages[1].cache_control.type "persistent" is not supported; the only type is "ephemeral"`, "messages[1].cache_control.type"},
		{"part ttl", `{"messages":[` + user + `,{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral","ttl":"2h"}}]}]}`,
			`invalid request: messages[1].content[1].cache_control.ttl "2h" is not one of "5m", "1h"`, "messages[1].content[1].cache_control.ttl"},
		{"missing type", `{"messages":[{"role":"system","content":"s","cache_control":{"ttl":"1h"}},` + user + `]}`,
			`invalid request: messages[0].cache_control.type is missing; the only type is "ephemeral"`, "messages[0].cache_control.type"},
		{"tool", `{"messages":[` + user + `],"tools":[{"type":"function","function":{"name":"f"},"cache_control":{"type":"ephemeral","ttl":"5 minutes"}}]}`,
			`invalid request: tools[0].cache_control.ttl "5 minutes" is not one of "5m", "1h"`, "tools[0].cache_control.ttl"},
		{"function", `{"messages":[` + user + `],"tools":[{"type":"function","function":{"name":"f","cache_control":{"type":""}}}]}`,
			`invalid request: tools[0].function.cache_control.type is missing; the only type is "ephemeral"`, "tools[0].function.cache_control.type"},
		{"checked also where it would have no effect", `{"messages":[` + user + `],"tools":[{"name":"f","cache_control":{"type":"x"}}],"tool_choice":"none"}`,
			`invalid request: tools[0].cache_control.type "x" is not supported; the only type is "ephemeral"`, "tools[0].cache_control.type"},
		{"retention", `{"messages":[` + user + `],"prompt_cache_retention":"7d"}`,
			`invalid request: prompt_cache_retention "7d" is not one of "in-memory", "24h"`, "prompt_cache_retention"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := translateBody(t, tt.body, translate.Options{})
			require.ErrorIs(t, err, fault.ErrInvalidRequest)
			assert.EqualError(t, err, tt.want)
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
		})
	}
}

// TestAutoCacheThreshold: the automatic point after the last message comes exactly when the
// bytes of the Converse JSON before it reach 4 × the model's minimum, per model family;
// never on models without prompt caching, nor with automatic caching off.
func TestAutoCacheThreshold(t *testing.T) {
	t.Parallel()
	// The messages JSON of one user text around the text itself.
	frame := len(`[{"role":"user","content":[{"text":""}]}]`)
	tests := []struct {
		model     string
		minTokens int // 0: no prompt caching
	}{
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", 1024},
		{"anthropic.claude-3-7-sonnet-20250219-v1:0", 1024},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1024},
		{"us.amazon.nova-pro-v1:0", 1024},
		{"amazon.nova-lite-v1:0", 1536},
		{"amazon.nova-micro-v1:0", 1536},
		{"global.anthropic.claude-sonnet-4-6", 2048},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", 2048},
		{"us.anthropic.claude-haiku-4-5-20251001-v1:0", 4096},
		{"us.anthropic.claude-opus-4-6-v1", 4096},
		{"anthropic.claude-3-haiku-20240307-v1:0", 0},
		{"meta.llama3-1-70b-instruct-v1:0", 0},
		{"mistral.mistral-large-2407-v1:0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			need := 4 * max(tt.minTokens, 1024)
			body := func(text int) string {
				return `{"model":"` + tt.model + `","messages":[{"role":"user","content":"` + strings.Repeat("x", text) + `"}]}`
			}
			below, _, err := translateBody(t, body(need-frame-1), translate.Options{})
			require.NoError(t, err)
			assert.False(t, strings.Contains(below, "cachePoint"), "one byte short")
			at, names, err := translateBody(t, body(need-frame), translate.Options{})
			require.NoError(t, err)
			if tt.minTokens == 0 {
				assert.False(t, strings.Contains(at, "cachePoint"), "no prompt caching")
				return
			}
			assert.True(t, strings.HasSuffix(at, `"},`+cp+`]}]}`), "a point after the last block: %.80s…", at[len(at)-80:])
			assert.Equal(t, translate.CacheStats{Auto: 1, Sent: 1}, names.Stats.Cache)
			off, _, err := translateBody(t, body(need-frame), translate.Options{NoAutoCache: true})
			require.NoError(t, err)
			assert.False(t, strings.Contains(off, "cachePoint"), "automatic caching off")
		})
	}
}

// TestAutoCacheThresholdCountsEscapes: the estimate counts the bytes as sent, escapes
// included: a '"' is two bytes of JSON.
func TestAutoCacheThresholdCountsEscapes(t *testing.T) {
	t.Parallel()
	frame := len(`[{"role":"user","content":[{"text":""}]}]`)
	body := func(quotes int) string {
		return `{` + sonnet4 + `,"messages":[{"role":"user","content":"` + strings.Repeat(`\"`, quotes) + `"}]}`
	}
	need := 4 * 1024
	below, _, err := translateBody(t, body((need-frame)/2), translate.Options{}) // 4,095 bytes
	require.NoError(t, err)
	assert.False(t, strings.Contains(below, "cachePoint"), "one byte short")
	at, _, err := translateBody(t, body((need-frame)/2+1), translate.Options{}) // 4,097 bytes
	require.NoError(t, err)
	assert.True(t, strings.Contains(at, "cachePoint"), "at the minimum")
}

// TestAutoCacheAgentTurns: over an agent's turns the automatic points stay after the tools
// and the system prompt and move with the end of the history, so they never add up; the
// client's own point stays where it is.
func TestAutoCacheAgentTurns(t *testing.T) {
	t.Parallel()
	system := strings.Repeat("You are a careful Kubernetes policy assistant. ", 100) // ~4,700 bytes
	tools := `"tools":[{"type":"function","function":{"name":"save_policy","description":"` + strings.Repeat("Save a policy file. ", 250) + `",
		"parameters":{"type":"object","properties":{"filename":{"type":"string"}}}}}]`
	msgs := []string{`{"role":"system","content":"` + system + `"}`, `{"role":"user","content":"Write a policy.","cache_control":` + eph + `}`}
	for turn := 1; turn <= 6; turn++ {
		id := "call_" + strconv.Itoa(turn)
		msgs = append(msgs,
			`{"role":"assistant","tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"p.yaml\"}"}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":"saved"}`)
		got, names, err := translateBody(t, `{`+sonnet4+`,"messages":[`+strings.Join(msgs, ",")+`],`+tools+`}`, translate.Options{})
		require.NoError(t, err)
		assert.Equal(t, 4, strings.Count(got, `"cachePoint"`), "turn %d", turn)
		assert.Equal(t, translate.CacheStats{Hints: 1, Auto: 3, Sent: 4}, names.Stats.Cache, "turn %d", turn)
		assert.Contains(t, got, `{"text":"Write a policy."},`+cp, "the client's point stays")
		assert.True(t, strings.HasSuffix(got[:strings.Index(got, `],"system"`)], `{"toolResult":{"toolUseId":"`+id+`","content":[{"text":"saved"}]}},`+cp+`]}`),
			"turn %d: the last point follows the newest result", turn)
		assert.Contains(t, got, `"system":[{"text":"`+system+`"},`+cp+`]`)
		assert.Contains(t, got, `}}}},`+cp+`]}}`, "after the tools")
	}
}

// BenchmarkRequestCache is BenchmarkRequest's agent turn with automatic caching on and
// off, at three sizes: small (its JSON far below Sonnet 4's minimum of 4,096 bytes: the
// upper bound decides), near (a 2 KB system prompt: the bounds leave it open, the sections
// are encoded to be counted) and large (a 20 KB system prompt: the content's own bytes
// decide, three points are placed). The difference between auto and off is the cost of the
// automatic points.
func BenchmarkRequestCache(b *testing.B) {
	for _, size := range []struct {
		name   string
		system int
	}{{"small", 0}, {"near", 2000}, {"large", 20000}} {
		for _, opts := range []translate.Options{{}, {NoAutoCache: true}} {
			b.Run(size.name+"/"+map[bool]string{false: "auto", true: "off"}[opts.NoAutoCache], func(b *testing.B) {
				req := benchRequest()
				if size.system > 0 {
					req.Messages[0].Content = strings.Repeat("x", size.system)
				}
				model := capabilities.Lookup(req.Model)
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := translate.RequestWith(req, model, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
