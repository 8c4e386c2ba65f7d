package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/pgtest"
	"github.com/nirmata/llm-gateway/internal/pricing"
)

// The audit trail end to end (docs/PROTOCOL.md 17): replicas writing to one real
// PostgreSQL, the records read back through the admin API, and a store outage that drops
// records but no call.

const (
	auditKey = "audit-team-key-0123456789"
	adminKey = "admin-key-0123456789abcdef"
)

// auditConfig is a gateway config whose key "team" is audited at full into dsn, with the
// admin API on a free port and the alias "agent" failing over from us-west-2 to the
// gateway's own region.
func auditConfig(t *testing.T, dsn string) config.Config {
	cfg := defaultConfig(t)
	cfg.Keys = []config.Key{{Name: "team", Key: auditKey}}
	cfg.Audit, cfg.AuditDSN = audit.LevelFull, dsn
	cfg.AdminAddr, cfg.AdminKeys = "127.0.0.1:0", []string{adminKey}
	cfg.ModelAliases = map[string][]config.Target{"agent": {{ModelID: testModel, Region: "us-west-2"}, {ModelID: testModel}}}
	return cfg
}

// serveAudited serves cfg on upstream until stopped (or the test ends).
func serveAudited(t *testing.T, cfg config.Config, upstream gateway.Option) (started, *serving) {
	t.Helper()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	core, logs := observer.New(zap.DebugLevel)
	addrs, s := serve(t, cfg, zap.New(core), upstream)
	return started{Addrs: addrs, logs: logs}, s
}

// sent is one call of the mixed run and what its record must say.
type sent struct {
	id, surface string
	stream      bool
	status      int
	failovers   int
	repaired    bool
}

// requestID sends req and returns its X-Request-Id and status, the body read whole.
func requestID(t *testing.T, req *http.Request) (string, int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	id := resp.Header.Get("X-Request-Id")
	require.NotEmpty(t, id)
	return id, resp.StatusCode, body
}

func newPost(t *testing.T, url, body string, headers ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// adminGet reads path from g's admin API into v and returns the status.
func adminGet(t *testing.T, g started, path string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+g.Admin+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, v), string(body))
	}
	return resp.StatusCode
}

// TestAuditTrailAcrossReplicas: two replicas with audit: full on one PostgreSQL serve a
// mixed run (every surface, a stream, a failover, a repair, a refused request); once they
// have stopped, which writes what they held, a third reads every call back through the
// admin API with its key, surface, tokens, cost and content, and the usage totals add up.
// With PostgreSQL stopped, calls are served and their records counted as dropped.
func TestAuditTrailAcrossReplicas(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	cfg := auditConfig(t, pg.CreateDatabase("audit"))
	simA := recordSim(t, "throttle,region=us-west-2")
	simB := recordSim(t, "invalid_tool_args,times=1")
	a, stopA := serveAudited(t, cfg, simA.upstream())
	b, stopB := serveAudited(t, cfg, simB.upstream())
	bearer := "Bearer " + auditKey
	var calls []sent

	// Replica B: a repair first (the simulator's one invalid call), an OpenAI stream, a
	// Responses call, a refused request.
	id, status, body := requestID(t, newPost(t, "http://"+b.HTTP+"/llm-apps/chat",
		policyBody(testModel, false, `,"tool_validation":"repair"`), "Authorization", bearer))
	require.Equal(t, http.StatusOK, status, string(body))
	calls = append(calls, sent{id: id, surface: "nirmata", status: 200, repaired: true})
	id, status, body = requestID(t, newPost(t, "http://"+b.HTTP+"/v1/chat/completions",
		`{"model":"`+testModel+`","stream":true,"messages":[{"role":"user","content":"stream please"}]}`, "Authorization", bearer))
	require.Equal(t, http.StatusOK, status, string(body))
	calls = append(calls, sent{id: id, surface: "openai", stream: true, status: 200})
	id, status, body = requestID(t, newPost(t, "http://"+b.HTTP+"/v1/responses",
		`{"model":"`+testModel+`","input":"respond please"}`, "Authorization", bearer))
	require.Equal(t, http.StatusOK, status, string(body))
	calls = append(calls, sent{id: id, surface: "responses", status: 200})
	id, status, body = requestID(t, newPost(t, "http://"+b.HTTP+"/v1/chat/completions",
		`{"model":"no.such-model-v1:0","messages":[{"role":"user","content":"hi"}]}`, "Authorization", bearer))
	require.GreaterOrEqual(t, status, 400, string(body))
	calls = append(calls, sent{id: id, surface: "openai", status: status})

	// Replica A: Nirmata, Anthropic's Messages, gRPC, and a failover.
	id, status, body = requestID(t, newPost(t, "http://"+a.HTTP+"/llm-apps/chat", hello, "Authorization", bearer))
	require.Equal(t, http.StatusOK, status, string(body))
	calls = append(calls, sent{id: id, surface: "nirmata", status: 200})
	id, status, body = requestID(t, newPost(t, "http://"+a.HTTP+"/v1/messages",
		`{"model":"`+testModel+`","max_tokens":256,"messages":[{"role":"user","content":"hello Claude"}]}`,
		"x-api-key", auditKey, "anthropic-version", "2023-06-01", "X-Claude-Code-Session-Id", "session-42"))
	require.Equal(t, http.StatusOK, status, string(body))
	calls = append(calls, sent{id: id, surface: "anthropic", status: 200})
	var header metadata.MD
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", bearer)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, a.GRPC)).Chat(ctx, grpcRequest(t, hello), grpc.Header(&header))
	require.NoError(t, err)
	require.Len(t, header.Get("x-request-id"), 1)
	calls = append(calls, sent{id: header.Get("x-request-id")[0], surface: "grpc"})
	id, status, body = requestID(t, newPost(t, "http://"+a.HTTP+"/llm-apps/chat", agentBody("fail over", ""), "Authorization", bearer))
	require.Equal(t, http.StatusOK, status, string(body))
	calls = append(calls, sent{id: id, surface: "nirmata", status: 200, failovers: 1})

	// Not a chat call: no record.
	models, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+b.HTTP+"/v1/models", nil)
	require.NoError(t, err)
	models.Header.Set("Authorization", bearer)
	_, status, body = requestID(t, models)
	require.Equal(t, http.StatusOK, status, string(body))

	require.NoError(t, stopA.stop())
	require.NoError(t, stopB.stop())

	c, stopC := serveAudited(t, cfg, simA.upstream())
	var total audit.UsageRow
	for _, want := range calls {
		var rec audit.Record
		require.Equal(t, http.StatusOK, adminGet(t, c, "/admin/v1/calls/"+want.id, &rec), "call %s (%s)", want.id, want.surface)
		assert.Equal(t, "team", rec.Key, want.id)
		assert.Equal(t, want.surface, rec.Surface, want.id)
		assert.Equal(t, want.stream, rec.Stream, want.id)
		assert.Equal(t, want.status, rec.Status, want.id)
		assert.Equal(t, want.failovers, rec.Failovers, want.id)
		assert.NotContains(t, string(rec.Request)+string(rec.Answer), auditKey, "never the key")
		total.InputTokens += rec.InputTokens
		total.OutputTokens += rec.OutputTokens
		total.CostUSD += rec.CostUSD
		if want.status >= 400 {
			assert.Equal(t, "not_found", rec.ErrorKind, want.id)
			assert.Zero(t, rec.InputTokens, want.id)
			continue
		}
		assert.Empty(t, rec.ErrorKind, want.id)
		assert.Positive(t, rec.InputTokens, want.id)
		assert.Positive(t, rec.OutputTokens, want.id)
		price, ok := pricing.New(nil).Lookup(rec.ModelServed)
		require.True(t, ok, rec.ModelServed)
		assert.InDelta(t, pricing.Round(price.Cost(usageOf(rec))), rec.CostUSD, 1e-9, "%s: tokens at the table's price", want.id)
		assert.Positive(t, rec.CostUSD, want.id)
		assert.NotEmpty(t, rec.Request, "full keeps the request")
		assert.NotEmpty(t, rec.Answer, "full keeps the answer")
		if want.repaired {
			assert.Equal(t, "repaired", rec.ToolValidation)
			assert.Equal(t, 1, rec.Repairs)
			require.Len(t, rec.ToolCalls, 1)
			assert.Equal(t, audit.ToolCall{Name: "save_policy", ID: rec.ToolCalls[0].ID, Outcome: "repaired"}, rec.ToolCalls[0])
		}
		if want.surface == "anthropic" {
			assert.Equal(t, "session-42", rec.SessionID)
		}
	}

	var usage struct{ Rows []audit.UsageRow }
	require.Equal(t, http.StatusOK, adminGet(t, c, "/admin/v1/usage?group_by=key", &usage))
	require.Len(t, usage.Rows, 1)
	row := usage.Rows[0]
	assert.Equal(t, "team", row.Key)
	assert.EqualValues(t, len(calls), row.Requests)
	assert.Equal(t, total.InputTokens, row.InputTokens)
	assert.Equal(t, total.OutputTokens, row.OutputTokens)
	assert.InDelta(t, total.CostUSD, row.CostUSD, 1e-8)
	resp, err := http.Get("http://" + c.Admin + "/admin/v1/usage")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the admin API without the admin key")

	// PostgreSQL stops: calls are served, their records dropped and counted.
	pg.Stop()
	for range 2 {
		id, status, body = requestID(t, newPost(t, "http://"+c.HTTP+"/llm-apps/chat", hello, "Authorization", bearer))
		require.Equal(t, http.StatusOK, status, string(body))
	}
	dropped := func() float64 {
		resp, err := http.Get("http://" + c.HTTP + "/metrics")
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, `gateway_audit_dropped_total{reason="store_error"} `); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n
			}
		}
		return 0
	}
	require.Eventually(t, func() bool { return dropped() == 2 }, 10*time.Second, 10*time.Millisecond,
		"the next batch fails to be written: both records are dropped and counted")
	require.NoError(t, stopC.stop())
	lines := c.logs.FilterMessage("audit store write failed: records are dropped until it writes again").All()
	require.NotEmpty(t, lines, "the outage is logged once")
	assert.Len(t, lines, 1)
}

// usageOf is a record's usage as the chat model counts it.
func usageOf(rec audit.Record) chat.Usage {
	return chat.Usage{PromptTokens: int32(rec.InputTokens), CompletionTokens: int32(rec.OutputTokens),
		CacheReadTokens: int32(rec.CacheReadTokens), CacheWriteTokens: int32(rec.CacheWriteTokens)}
}
