package translate_test

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

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/translate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// These tests are in package translate_test so that they can read their fixtures, Nirmata
// REST bodies, with the REST surface's own decoder (nirmata.DecodeRequest): translate
// itself knows only the chat model, and internal/nirmata imports it.

// loadRequest reads a request fixture and converts it to the chat model. A fixture the
// conversion refuses is returned as its error.
func loadRequest(t testing.TB, path string) (*chat.Request, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	req, _, err := nirmata.DecodeRequest(data)
	return req, err
}

// translateFixture runs Request on testdata/<name>.request.json with the model it names.
func translateFixture(t testing.TB, name string) (*bedrock.ConverseRequest, *translate.Plan, error) {
	t.Helper()
	req, err := loadRequest(t, filepath.Join("testdata", name+".request.json"))
	if err != nil {
		return nil, nil, err
	}
	return translate.Request(req, capabilities.Lookup(req.Model))
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
				require.True(t, errors.Is(err, fault.ErrInvalidRequest) || errors.Is(err, fault.ErrUnsupported),
					"error wraps neither fault.ErrInvalidRequest nor fault.ErrUnsupported: %v", err)
				checkGolden(t, name+".error.golden.txt", []byte(err.Error()+"\n"), name+".converse.golden.json")
				return
			}
			require.NotNil(t, names)
			body, err := bedrock.MarshalRequest(out)
			require.NoError(t, err)
			req, err := loadRequest(t, filepath.Join("testdata", name+".request.json"))
			require.NoError(t, err)
			require.NoError(t, validateBody(req.Model, body))
			checkGolden(t, name+".converse.golden.json", indent(t, body), name+".error.golden.txt")
		})
	}
}

// responseJSON renders an answer as the API's ChatResponse, stably: protojson's spacing is
// randomized, so it is compacted and indented again.
func responseJSON(t testing.TB, resp *chat.Response) []byte {
	t.Helper()
	return indent(t, nirmata.AppendResponse(nil, resp))
}

// TestResponseGolden translates every testdata/<case>.bedrock-response.json. When
// <case>.request.json exists too, its Plan are used, so mapped tool names and ids must
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
			var names *translate.Plan
			if _, err := os.Stat(filepath.Join("testdata", name+".request.json")); err == nil {
				_, names, err = translateFixture(t, name)
				require.NoError(t, err)
			}
			resp, err := translate.Response(&upstream, names)
			if err != nil {
				require.Nil(t, resp)
				require.ErrorIs(t, err, fault.ErrUpstream)
				checkGolden(t, name+".response.error.golden.txt", []byte(err.Error()+"\n"), name+".response.golden.json")
				return
			}
			checkGolden(t, name+".response.golden.json", responseJSON(t, resp), name+".response.error.golden.txt")
		})
	}
}
