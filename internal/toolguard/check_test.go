package toolguard

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// TestOffIsWhoseItIs: off asked by a request is the request's own, and its strict tools
// on a model without native strict tool use are still repaired; off set by the operator is
// a ceiling, and their calls come unenforced (docs/PROTOCOL.md 13.1, 13.2).
func TestOffIsWhoseItIs(t *testing.T) {
	t.Parallel()
	g := New(Options{}, zap.NewNop())
	model := capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0") // no native strict tools
	req := &chat.Request{ToolValidation: chat.ValidationOff,
		Tools: []chat.Tool{{Name: "get", Strict: true, Parameters: []byte(`{"type":"object"}`)}}}

	own, err := g.Mode(req, "")
	require.NoError(t, err)
	assert.Equal(t, "off", own.String())
	c, unenforced := g.Check(req, model, own, true, &translate.Plan{}, g.Budget())
	assert.True(t, c.CanRepair(), "the request's off: strict tools are still repaired")
	assert.False(t, unenforced)

	operator, err := g.Mode(&chat.Request{ToolValidation: chat.ValidationRepair, Tools: req.Tools}, chat.ValidationOff)
	require.NoError(t, err)
	assert.Equal(t, "off", operator.String(), "the operator's off is a ceiling")
	c, unenforced = g.Check(req, model, operator, true, &translate.Plan{}, g.Budget())
	assert.Nil(t, c, "nothing is checked")
	assert.True(t, unenforced, "strict calls come without a guarantee, and the answer says so")
}

// TestChecksKeepNoToolDescriptions: a Check lives as long as its stream is open, and keeps
// of the request's tools what checking their calls takes, not their descriptions: an
// agent's tools carry kilobytes of them each, which every open stream would otherwise
// hold.
func TestChecksKeepNoToolDescriptions(t *testing.T) {
	const checks, description = 40, 64 << 10
	g := New(Options{}, zap.NewNop())
	model := capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0")
	mode, err := g.Mode(&chat.Request{}, "")
	require.NoError(t, err)
	heap := func() int64 { // signed: a collection may leave less than before
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := heap()
	kept := make([]*Check, checks)
	for i := range kept {
		req := &chat.Request{Tools: []chat.Tool{{Name: "get", Description: strings.Repeat("d", description),
			Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}}
		kept[i], _ = g.Check(req, model, mode, true, &translate.Plan{}, g.Budget())
		require.NotNil(t, kept[i])
	}
	perCheck := (heap() - before) / checks
	runtime.KeepAlive(kept)
	assert.Less(t, perCheck, int64(description/4), "bytes a check holds once its request is let go")
}
