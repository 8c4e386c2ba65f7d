//go:build clients

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAgentsSDK runs test/node/agents.mjs: the OpenAI Agents SDK (@openai/agents, pinned in
// test/node/package-lock.json), unmodified, against the gateway's Responses API on the
// simulator: an agent with function tools whose tool loop the SDK drives, run() unary and
// streamed, then a second turn on the first's history. The script checks what the tools
// were called with, the run's items and events, and the answers; it fails naming the check.
func TestAgentsSDK(t *testing.T) {
	t.Parallel()
	node, dir := requireNode(t)
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	r := runNode(t.Context(), node, dir, "agents.mjs", g)
	if r.err != nil {
		t.Fatalf("node agents.mjs: %v (after %v); its output:\n%s", r.err, r.took, r.out)
	}
	t.Logf("node agents.mjs (%v):\n%s", r.took, r.out)

	// Three runs, each a tool loop of two requests, on /v1/responses alone.
	var lines int
	for _, e := range g.logs.FilterMessage("http").AllUntimed() {
		m := e.ContextMap()
		lines++
		assert.Equal(t, "/v1/responses", m["route"], "access line %v", m)
		assert.Equal(t, "ok", m["code"], "access line %v", m)
	}
	assert.Equal(t, 6, lines, "requests")
}
