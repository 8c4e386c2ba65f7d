package stream_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const fixtureSuffix = ".bedrock.jsonl"

func fixtureCases(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*"+fixtureSuffix))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), fixtureSuffix))
	}
	return names
}

// caseNames returns the Names of testdata/<name>.request.json translated for its model, or
// nil when the case has no request.
func caseNames(t testing.TB, name string) *translate.Plan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".request.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	req, _, err := nirmata.DecodeRequest(data)
	require.NoError(t, err)
	_, names, err := translate.Request(req, capabilities.Lookup(req.Model))
	require.NoError(t, err)
	return names
}

func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test -update")
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestGolden runs every testdata/<case>.bedrock.jsonl through the real event-stream reader
// and a Machine, and compares what the client gets with <case>.deltas.golden.jsonl (JSONL)
// and <case>.chunked.golden.jsonl (chunked).
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range fixtureCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			names := caseNames(t, name)
			body := fixtureBody(t, filepath.Join("testdata", name+fixtureSuffix))
			read := func(r io.Reader) ([]chat.Event, *streamError) {
				es := bedrock.NewEventStream(io.NopCloser(r))
				defer es.Close()
				evs, err := run(t, stream.NewMachine(names), es)
				return evs, clientError(t, err)
			}

			evs, fail := read(bytes.NewReader(body))
			checkGolden(t, name+".deltas.golden.jsonl", renderJSONL(evs, fail))

			// The same body read one byte at a time gives the same events.
			evs1, fail1 := read(iotest.OneByteReader(bytes.NewReader(body)))
			if diff := cmp.Diff(evs, evs1, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("one byte at a time (-all at once +one byte):\n%s", diff)
			}
			require.Equal(t, fail, fail1)

			chunked := renderChunked("req-1", evs, fail)
			checkGolden(t, name+".chunked.golden.jsonl", chunked)
			checkChunked(t, evs, fail, parseChunked(t, chunked))
		})
	}
}

// checkChunked checks a chunked rendering against the events of the same stream: text in
// order, one ToolStart per completed call with its complete arguments, and an Error or
// Done line last.
func checkChunked(t *testing.T, evs []chat.Event, fail *streamError, lines []chunkLine) {
	t.Helper()
	var wantText, gotText strings.Builder
	type call struct{ id, name, args string }
	var calls []call
	for _, e := range evs {
		switch e.Kind {
		case chat.EventContent:
			wantText.WriteString(e.Text)
		case chat.EventToolCall:
			if e.ToolCall.ID != "" {
				calls = append(calls, call{id: e.ToolCall.ID, name: e.ToolCall.Name})
			}
			calls[e.Index].args += e.ToolCall.Arguments
		}
	}
	ids := map[string]bool{}
	var starts []call
	for i, l := range lines {
		require.False(t, ids[l.ID], "duplicate id %q", l.ID)
		ids[l.ID] = true
		switch l.Type {
		case nirmata.ChunkText:
			gotText.WriteString(l.Data)
		case nirmata.ChunkReasoning, nirmata.ChunkReasoningBlock:
		case nirmata.ChunkToolStart:
			id, name, args := toolStartCall(t, l.Data)
			starts = append(starts, call{id, name, args})
		case nirmata.ChunkError:
			require.NotNil(t, fail)
			require.Equal(t, fail.message, l.Data)
			require.Equal(t, len(lines)-1, i, "Error must be the last line")
		case nirmata.ChunkDone:
			require.Nil(t, fail)
			require.Equal(t, chat.EventDone, evs[len(evs)-1].Kind)
			require.Equal(t, len(lines)-1, i, "Done must be the last line")
		default:
			t.Fatalf("unexpected chunked type %q", l.Type)
		}
	}
	require.Equal(t, wantText.String(), gotText.String())
	if fail == nil {
		require.Len(t, starts, len(calls))
		for _, s := range starts {
			require.Contains(t, calls, s)
		}
	}
}

// TestGoldenFixturesDecode guards the fixtures themselves: every event line decodes to an
// event the reader knows, except the one deliberately unknown type.
func TestGoldenFixturesDecode(t *testing.T) {
	t.Parallel()
	for _, name := range fixtureCases(t) {
		for _, ev := range fixtureEvents(t, filepath.Join("testdata", name+fixtureSuffix)) {
			known := ev.MessageStart != nil || ev.ContentBlockStart != nil || ev.ContentBlockDelta != nil ||
				ev.ContentBlockStop != nil || ev.MessageStop != nil || ev.Metadata != nil
			require.True(t, known || ev.Type == "someFutureEvent", "%s: event %q decoded to nothing", name, ev.Type)
		}
	}
}

func TestMappedNames(t *testing.T) {
	t.Parallel()
	names := caseNames(t, "mapped_names")
	require.NotNil(t, names)
	require.Equal(t, "fs.read_file", names.ToolName("fs_read_file"), "the fixture must use the Bedrock-side name")
	require.Equal(t, 1, names.Stats.MappedToolCallIDs, "the fixture's history id must be mapped")
}
