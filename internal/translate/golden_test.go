package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// loadRequest reads a request fixture: the ChatRequest in protojson form (proto field
// names), so these tests do not depend on the REST codec.
func loadRequest(t testing.TB, path string) *llmgatewayv1.ChatRequest {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var req llmgatewayv1.ChatRequest
	require.NoError(t, protojson.Unmarshal(data, &req), path)
	return &req
}

// translateFixture runs Request on testdata/<name>.request.json with the model it names.
func translateFixture(t testing.TB, name string) (*bedrock.ConverseRequest, *Names, error) {
	t.Helper()
	req := loadRequest(t, filepath.Join("testdata", name+".request.json"))
	return Request(req, capabilities.Lookup(req.GetModel()))
}

// checkGolden compares got with testdata/<file>, or rewrites it with -update. The golden of
// the other outcome (success vs error) must not exist, so a case cannot silently flip.
func checkGolden(t *testing.T, file string, got []byte, other string) {
	t.Helper()
	path := filepath.Join("testdata", file)
	otherPath := filepath.Join("testdata", other)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		if err := os.Remove(otherPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test -update")
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
	_, err = os.Stat(otherPath)
	require.ErrorIs(t, err, os.ErrNotExist, "stale golden %s", otherPath)
}

// indent pretty-prints JSON without touching the bytes of strings and numbers.
func indent(t testing.TB, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, body, "", "  "))
	buf.WriteByte('\n')
	return buf.Bytes()
}

func caseNames(t testing.TB, suffix string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*"+suffix))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), suffix))
	}
	return names
}

// TestRequestGolden translates every testdata/<case>.request.json and compares the
// marshalled Converse request (or the error text) with its golden file. Every request that
// is produced must pass validateBody.
func TestRequestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range caseNames(t, ".request.json") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, names, err := translateFixture(t, name)
			if err != nil {
				require.Nil(t, out)
				require.Nil(t, names)
				require.True(t, errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrUnsupported),
					"error wraps neither ErrInvalidRequest nor ErrUnsupported: %v", err)
				checkGolden(t, name+".error.golden.txt", []byte(err.Error()+"\n"), name+".converse.golden.json")
				return
			}
			require.NotNil(t, names)
			body, err := bedrock.MarshalRequest(out)
			require.NoError(t, err)
			model := loadRequest(t, filepath.Join("testdata", name+".request.json")).GetModel()
			require.NoError(t, validateBody(model, body))
			checkGolden(t, name+".converse.golden.json", indent(t, body), name+".error.golden.txt")
		})
	}
}

// responseJSON renders a ChatResponse stably: protojson's spacing is randomized, so it is
// compacted and indented again.
func responseJSON(t testing.TB, resp *llmgatewayv1.ChatResponse) []byte {
	t.Helper()
	raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(resp)
	require.NoError(t, err)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, raw))
	return indent(t, compact.Bytes())
}

// TestResponseGolden translates every testdata/<case>.bedrock-response.json. When
// <case>.request.json exists too, its Names are used, so mapped tool names and ids must
// come back as the client sent them.
func TestResponseGolden(t *testing.T) {
	t.Parallel()
	for _, name := range caseNames(t, ".bedrock-response.json") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", name+".bedrock-response.json"))
			require.NoError(t, err)
			var upstream bedrock.ConverseResponse
			require.NoError(t, json.Unmarshal(data, &upstream))
			var names *Names
			if _, err := os.Stat(filepath.Join("testdata", name+".request.json")); err == nil {
				_, names, err = translateFixture(t, name)
				require.NoError(t, err)
			}
			resp, err := Response(&upstream, names)
			if err != nil {
				require.Nil(t, resp)
				require.ErrorIs(t, err, ErrUpstream)
				checkGolden(t, name+".response.error.golden.txt", []byte(err.Error()+"\n"), name+".response.golden.json")
				return
			}
			checkGolden(t, name+".response.golden.json", responseJSON(t, resp), name+".response.error.golden.txt")
		})
	}
}
