package translate_test

import (
	"os"
	"testing"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// restBenchBody is a typical REST agent turn (3 tools, a tool round trip), shared with the
// REST decoder's benchmarks.
const restBenchBody = "../nirmata/testdata/agent_turn.json"

// BenchmarkRESTRequest is the whole request path of a REST call before the upstream:
// decode the body, convert it to the chat model, translate it, marshal the Converse body.
func BenchmarkRESTRequest(b *testing.B) {
	body, err := os.ReadFile(restBenchBody)
	if err != nil {
		b.Fatal(err)
	}
	model := capabilities.Lookup(testModel)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req, _, err := nirmata.DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		out, _, err := translate.Request(req, model)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bedrock.MarshalRequest(out); err != nil {
			b.Fatal(err)
		}
	}
}
