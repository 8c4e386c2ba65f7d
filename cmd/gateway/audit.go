package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/admin"
	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/observe"
)

const auditUsage = `gateway usage: the audit trail's totals (docs/PROTOCOL.md 17) as a table.
gateway replay: re-run a call the audit trail kept whole (audit: full) on another model, and
print both answers side by side with their tokens, cost and latency.

Usage:
  gateway usage [--from T] [--to T] [--group-by key,model,day] [--json] [--admin-url URL] [settings]
  gateway replay <request_id> --model <alias or model id> [--admin-url URL] [settings]

T is an RFC 3339 time (2026-11-29T10:00:00Z) or a date (2026-11-29; as --to, the end of
that day); none is unbounded. --group-by takes key, model, day or several, comma-separated
(default key).

Where the records come from: with --admin-url (or GATEWAY_ADMIN_URL), a running gateway's
admin API, with the admin key in GATEWAY_ADMIN_KEY (else --admin-key, which every user of
the host sees in ps, else the first of admin_keys); without it, the store of audit_dsn,
opened directly: PostgreSQL at any time, the embedded file only while no gateway has it open
(ask the running one with --admin-url).

[settings] are the gateway's own (gateway --help): --config FILE, --audit-dsn, and for
replay the upstream (--sim for the simulator, else AWS Bedrock as the gateway reaches it)
and the aliases. The replay is one unary call; it is not itself recorded.
`

func printAuditUsage(w io.Writer) { fmt.Fprint(w, auditUsage) }

// auditFlags are the flags of gateway usage and replay; every other argument but the
// request id is a gateway setting.
type auditFlags struct {
	from, to, groupBy, model, adminURL, adminKey string
	json                                         bool
	id                                           string
	settings                                     []string
}

// parseAuditArgs takes usage's and replay's own flags out of args, each as --name value or
// --name=value; a first argument that is not a flag is the request id. The rest are the
// gateway's settings, in their order.
func parseAuditArgs(args []string) (auditFlags, error) {
	var f auditFlags
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		f.id, args = args[0], args[1:]
	}
	strs := map[string]*string{"from": &f.from, "to": &f.to, "group-by": &f.groupBy, "model": &f.model, "admin-url": &f.adminURL,
		"admin-key": &f.adminKey}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			return f, errHelp
		case strings.HasPrefix(a, "-") && name == "json" && !hasValue:
			f.json = true
		case strings.HasPrefix(a, "-") && strs[name] != nil:
			if !hasValue {
				if i+1 == len(args) {
					return f, usageError{fmt.Errorf("--%s needs a value", name)}
				}
				i++
				value = args[i]
			}
			*strs[name] = value
		default:
			f.settings = append(f.settings, a)
		}
	}
	if f.adminURL == "" {
		f.adminURL = os.Getenv("GATEWAY_ADMIN_URL")
	}
	return f, nil
}

// errHelp asks for the help of usage and replay.
var errHelp = errors.New("help")

// records is where usage and replay read the audit trail: a running gateway's admin API,
// or the store itself.
type records interface {
	usage(ctx context.Context, q url.Values) ([]audit.UsageRow, error)
	call(ctx context.Context, id string) (*audit.Record, error)
	close()
}

// openRecords opens the records f and cfg name.
func openRecords(ctx context.Context, f auditFlags, cfg config.Config) (records, error) {
	if f.adminURL != "" {
		key := cmp.Or(f.adminKey, os.Getenv("GATEWAY_ADMIN_KEY"))
		for _, k := range cfg.AdminKeys {
			if key == "" && !strings.HasPrefix(k, "sha256:") {
				key = k
			}
		}
		if key == "" {
			return nil, usageError{errors.New("--admin-url needs an admin key: set GATEWAY_ADMIN_KEY")}
		}
		return &adminAPI{base: strings.TrimRight(f.adminURL, "/"), key: key, client: &http.Client{Timeout: 30 * time.Second}}, nil
	}
	if path, ok, _ := audit.FilePath(cfg.AuditDSN); ok {
		if _, err := os.Stat(path); err != nil { // a command that reads creates no store
			return nil, fmt.Errorf("no audit store to read: %w; give the gateway's audit_dsn (--audit-dsn, --config) or its --admin-url", err)
		}
	}
	s, err := audit.Open(ctx, cfg.AuditDSN)
	if err != nil {
		return nil, err
	}
	return storeRecords{s}, nil
}

// adminAPI reads the records through a running gateway's admin API.
type adminAPI struct {
	base, key string
	client    *http.Client
}

func (a *adminAPI) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return usageError{fmt.Errorf("--admin-url: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body[:min(len(body), 200)]))
		}
		return fmt.Errorf("the admin API answered %d: %s", resp.StatusCode, e.Error)
	}
	return json.Unmarshal(body, v)
}

func (a *adminAPI) usage(ctx context.Context, q url.Values) ([]audit.UsageRow, error) {
	var answer struct {
		Rows []audit.UsageRow `json:"rows"`
	}
	err := a.get(ctx, admin.UsagePath+"?"+q.Encode(), &answer)
	return answer.Rows, err
}

func (a *adminAPI) call(ctx context.Context, id string) (*audit.Record, error) {
	var rec audit.Record
	if err := a.get(ctx, admin.CallsPath+url.PathEscape(id), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func (a *adminAPI) close() {}

// storeRecords reads the records from the store.
type storeRecords struct{ s audit.Store }

func (s storeRecords) usage(ctx context.Context, q url.Values) ([]audit.UsageRow, error) {
	uq, err := admin.ParseUsageQuery(q.Get("from"), q.Get("to"), q.Get("group_by"))
	if err != nil {
		return nil, usageError{err}
	}
	return s.s.Usage(ctx, uq)
}

func (s storeRecords) call(ctx context.Context, id string) (*audit.Record, error) {
	return s.s.Call(ctx, id)
}
func (s storeRecords) close() { _ = s.s.Close() }

// loadSettings loads the gateway settings of usage's and replay's command line.
func loadSettings(f auditFlags) (config.Config, error) {
	cfg, err := config.Load(f.settings, os.Getenv)
	if err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// openAuditRecords opens the records f's settings name.
func openAuditRecords(ctx context.Context, f auditFlags) (records, error) {
	cfg, err := loadSettings(f)
	if err != nil {
		return nil, err
	}
	return openRecords(ctx, f, cfg)
}

// runUsage is gateway usage.
func runUsage(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseAuditArgs(args)
	if err != nil {
		return err
	}
	if f.id != "" {
		return usageError{fmt.Errorf("gateway usage takes no argument; got %s", clip.Quote(f.id))}
	}
	query, err := admin.ParseUsageQuery(f.from, f.to, f.groupBy)
	if err != nil {
		return usageError{err}
	}
	recs, err := openAuditRecords(ctx, f)
	if err != nil {
		return err
	}
	defer recs.close()
	q := url.Values{}
	for name, v := range map[string]string{"from": f.from, "to": f.to, "group_by": f.groupBy} {
		if v != "" {
			q.Set(name, v)
		}
	}
	rows, err := recs.usage(ctx, q)
	if err != nil {
		return err
	}
	if f.json {
		return json.MarshalWrite(stdout, map[string]any{"rows": rows}, json.Deterministic(true))
	}
	printUsageTable(stdout, query.GroupBy, rows)
	return nil
}

// printUsageTable writes rows as a table: the columns of groupBy, then the totals, and a
// total row.
func printUsageTable(w io.Writer, groupBy []string, rows []audit.UsageRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, g := range []string{audit.ByDay, audit.ByKey, audit.ByModel} {
		if slices.Contains(groupBy, g) {
			head = append(head, strings.ToUpper(g))
		}
	}
	head = append(head, "REQUESTS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST USD")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	var total audit.UsageRow
	line := func(dims []string, r audit.UsageRow) {
		cells := append(dims, strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.InputTokens, 10),
			strconv.FormatInt(r.OutputTokens, 10), strconv.FormatInt(r.CacheReadTokens, 10),
			strconv.FormatInt(r.CacheWriteTokens, 10), strconv.FormatFloat(r.CostUSD, 'f', 6, 64))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, r := range rows {
		var dims []string
		for _, d := range [...]struct{ by, value string }{{audit.ByDay, r.Day}, {audit.ByKey, orDash(r.Key)}, {audit.ByModel, orDash(r.Model)}} {
			if slices.Contains(groupBy, d.by) {
				dims = append(dims, d.value)
			}
		}
		line(dims, r)
		total.Requests += r.Requests
		total.InputTokens += r.InputTokens
		total.OutputTokens += r.OutputTokens
		total.CacheReadTokens += r.CacheReadTokens
		total.CacheWriteTokens += r.CacheWriteTokens
		total.CostUSD += r.CostUSD
	}
	dims := make([]string, len(head)-6)
	if len(dims) > 0 {
		dims[0] = "total"
	}
	line(dims, total)
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runReplay is gateway replay.
func runReplay(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseAuditArgs(args)
	if err != nil {
		return err
	}
	if f.id == "" || f.model == "" {
		return usageError{errors.New("gateway replay needs a request id and --model")}
	}
	cfg, err := loadSettings(f)
	if err != nil {
		return err
	}
	recs, err := openRecords(ctx, f, cfg)
	if err != nil {
		return err
	}
	defer recs.close()
	rec, err := recs.call(ctx, f.id)
	if err != nil {
		return err
	}
	req, err := audit.DecodeRequest(rec.Request)
	if err != nil {
		return err
	}
	req.Model, req.ID = f.model, observe.NewRequestID(time.Now())
	// The replay serves no one: no listener beyond loopback, no admin address, no record.
	cfg.HTTPAddr, cfg.GRPCAddr, cfg.AdminAddr, cfg.Audit = "127.0.0.1:0", "127.0.0.1:0", "", audit.LevelOff
	for i := range cfg.Keys {
		cfg.Keys[i].Audit = ""
	}
	g, err := gateway.New(ctx, cfg, zap.NewNop())
	if err != nil {
		return err
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	defer func() { _ = g.Serve(done) }() // releases what New built
	start := time.Now()
	resp, res, err := g.Service().Chat(ctx, req)
	if err != nil {
		return fmt.Errorf("the replay on %s failed: %w", f.model, err)
	}
	printReplay(stdout, rec, replayed{resp: resp, model: res.Model, cost: res.CostUSD, latency: time.Since(start)})
	return nil
}

// replayed is what the replay's call gave.
type replayed struct {
	resp    *chat.Response
	model   string
	cost    float64
	latency time.Duration
}

// printReplay writes the recorded call and its replay side by side: their figures, then
// their answers.
func printReplay(w io.Writer, rec *audit.Record, r replayed) {
	fmt.Fprintf(w, "request %s, recorded %s, key %s, surface %s\n\n", rec.RequestID, rec.Time.Format(time.RFC3339), orDash(rec.Key), rec.Surface)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	u := r.resp.Usage
	rows := [][3]string{
		{"", "recorded", "replay"},
		{"model", rec.ModelServed, r.model},
		{"finish", orDash(rec.FinishReason), string(r.resp.Finish)},
		{"input tokens", strconv.FormatInt(rec.InputTokens, 10), strconv.Itoa(int(u.PromptTokens))},
		{"output tokens", strconv.FormatInt(rec.OutputTokens, 10), strconv.Itoa(int(u.CompletionTokens))},
		{"cache read tokens", strconv.FormatInt(rec.CacheReadTokens, 10), strconv.Itoa(int(u.CacheReadTokens))},
		{"cache write tokens", strconv.FormatInt(rec.CacheWriteTokens, 10), strconv.Itoa(int(u.CacheWriteTokens))},
		{"cost USD", strconv.FormatFloat(rec.CostUSD, 'f', 6, 64), strconv.FormatFloat(r.cost, 'f', 6, 64)},
		{"latency ms", strconv.FormatFloat(rec.LatencyMs, 'f', 0, 64), strconv.FormatInt(r.latency.Milliseconds(), 10)},
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row[0], row[1], row[2])
	}
	_ = tw.Flush()
	recorded := []string{"(the answer was not kept)"}
	if a := audit.DecodeAnswer(rec.Answer); a != nil {
		recorded = answerLines(a)
	}
	fmt.Fprintln(w)
	sideBySide(w, "recorded answer", "replay answer", recorded, answerLines(r.resp))
}

// answerColumn is the width of each answer's column.
const answerColumn = 58

// answerLines is an answer as lines of at most answerColumn runes: its text, then its tool
// calls.
func answerLines(a *chat.Response) []string {
	var lines []string
	for _, para := range strings.Split(a.Text, "\n") {
		lines = append(lines, wrap(para)...)
	}
	for _, tc := range a.ToolCalls {
		lines = append(lines, wrap("→ "+tc.Name+" "+tc.Arguments)...)
	}
	return lines
}

func wrap(s string) []string {
	var out []string
	for utf8.RuneCountInString(s) > answerColumn {
		i := 0
		for n := 0; n < answerColumn; n++ {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		out, s = append(out, s[:i]), s[i:]
	}
	return append(out, s)
}

func sideBySide(w io.Writer, leftHead, rightHead string, left, right []string) {
	pad := func(s string) string { return s + strings.Repeat(" ", max(0, answerColumn-utf8.RuneCountInString(s))) }
	fmt.Fprintf(w, "%s | %s\n%s-+-%s\n", pad(leftHead), rightHead, strings.Repeat("-", answerColumn), strings.Repeat("-", answerColumn))
	for i := range max(len(left), len(right)) {
		var l, r string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		fmt.Fprintf(w, "%s | %s\n", pad(l), r)
	}
}
