package bedrocksim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	req(hi),
	reqWith(weatherTC, hi, callA, user(resultA)),
	reqWith(weatherTC, user(`{"text":"use get_weather"}`)),
	reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"any":{}}}`, hi),
	reqWith(`"inferenceConfig":{"maxTokens":1}`, hi),
	req(user(`{"text":"x"}`, image("png", pngBytes), doc("pdf", "a b"))),
	req(user(image("jpeg", gifBytes), doc("md", "a"))),
	`{"messages":[{"role":"user","content":[{"text":null}]}]}`,
	`{"messages":[null]}`,
	`{"toolConfig":null,"messages":[{"role":"user","content":null}]}`,
	`{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"a","content":[null]}}]}]}`,
	`{"inferenceConfig":{"maxTokens":99999999999999999999}}`,
	`[]`, `{`, ``,
	// Reasoning and prompt caching (docs/BEDROCK.md G, H).
	toolTurn(signed(sonnetID, "Hi", "I will call get_weather."), redacted(sonnetID, "Hi")),
	toolTurn(thinkingBlock("x", "AQ==")),
	reqWith(join(fields(thinkOn, `"output_config":{"effort":"high"}`), `"inferenceConfig":{"maxTokens":2048,"temperature":1}`), hi, hello),
	reqWith(join(`"system":[{"text":"s"},{"cachePoint":{"type":"default","ttl":"1h"}}]`, tools(weather, cachePt)), user(`{"text":"a"}`, cachePt)),
	req(hi, assistant(`{"reasoningContent":{"redactedContent":"AA=="}}`, cachePt)),
	// Structured output and strict tools (docs/BEDROCK.md I).
	reqWith(outputConfig(personSchema), hi),
	reqWith(join(weatherTC, outputConfig(`{"type":"object","properties":{"n":{"type":"number","minimum":1}}}`)), user(`{"text":"use get_weather"}`)),
	reqWith(`"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{\"type\":\"object\",\"properties\":{\"r\":{\"$ref\":\"#\"}}}"}}}}`, hi),
	reqWith(anthropicOutput(`{"type":"json_schema","schema":`+personSchema+`}`), hi),
	reqWith(tools(strictTool("get_weather", weatherSchema), strictTool("u", `{"type":"object","properties":{"v":{"oneOf":[]}}}`)), user(`{"text":"use get_weather"}`)),
}

// fuzzModels are the models the fuzz targets validate against: one without structured output,
// one with it.
var fuzzModels = []string{sonnet4, sonnet45}

// FuzzValidateJSON: no input makes the validator panic, and what it accepts the answer
// builder can answer.
func FuzzValidateJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, id := range fuzzModels {
			model, _ := lookupModel(id)
			req, err := decodeRequest([]byte(body))
			if err != nil || validate(model, req, false) != nil {
				continue
			}
			a := buildAnswer(model, req, []byte(body))
			if a.StopReason == "" {
				t.Fatalf("answer without a stop reason for %q", body)
			}
		}
	})
}

// FuzzServe drives the whole handler, unary and stream, with arbitrary bodies.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	// Every answer that calls a tool gets broken arguments: breakCalls meets every schema too.
	sim := New(Options{Faults: []Fault{{Kind: FaultInvalidToolArgs}}})
	f.Fuzz(func(t *testing.T, body string, stream bool) {
		for _, id := range fuzzModels {
			path := "/model/" + id + "/converse"
			if stream {
				path += "-stream"
			}
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer k")
			w := httptest.NewRecorder()
			sim.ServeHTTP(w, r)
			if w.Code != http.StatusOK && w.Header().Get("X-Amzn-ErrorType") == "" {
				t.Fatalf("status %d without an error type", w.Code)
			}
		}
	})
}
