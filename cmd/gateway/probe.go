package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/core"
)

const probeUsage = `gateway probe: ask a running gateway what a model supports, so that a CLI can tell
whether to rely on tool calls or fall back to prompt-based generation.

Usage:
  gateway probe <url> [--model M] [--key K] [--json]

It reads <url>/llm-apps/capabilities (docs/PROTOCOL.md 4) and prints it as a table, or as
the gateway's JSON with --json. Exit codes:
  0  tools are supported for the model (without --model, the gateway's default model)
  1  they are not, or the model is unknown (the reason goes to stderr)
  2  the gateway cannot be reached, refused the key, or did not answer as a gateway does
e.g.
  export NIRMATA_TOOLS_ENABLED=$(gateway probe http://127.0.0.1:8080 >/dev/null && echo true || echo false)

Flags:
`

// Exit codes of gateway probe.
const (
	probeTools     = 0
	probeNoTools   = 1
	probeNoGateway = 2
)

// maxProbeBody bounds the capabilities answer the probe reads: a gateway's is a few KiB.
const maxProbeBody = 1 << 20

// probeOptions are gateway probe's flags.
type probeOptions struct {
	model, key string
	json       bool
	timeout    time.Duration
}

func probeFlags() (*flag.FlagSet, *probeOptions) {
	o := &probeOptions{}
	fs := flag.NewFlagSet("gateway probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.model, "model", "", "the model or alias to ask about; none: the gateway's default model")
	fs.StringVar(&o.key, "key", "", "an API key, sent as Authorization: Bearer <key> (the capabilities need none; a proxy in front may)")
	fs.BoolVar(&o.json, "json", false, "print the gateway's JSON instead of a table")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for the answer")
	return fs, o
}

func printProbeUsage(w io.Writer) {
	fmt.Fprint(w, probeUsage)
	fs, _ := probeFlags()
	printFlags(w, fs)
}

// probeFailure is why a probe exits with a code other than 0.
type probeFailure struct {
	code int
	msg  string
}

func (f *probeFailure) Error() string { return f.msg }

// runProbe is gateway probe: it returns the exit code.
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := probeFlags()
	base, err := probeArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printProbeUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gateway probe: %v\nRun 'gateway probe --help' for usage.\n", err)
		return probeNoGateway
	}
	body, caps, err := probe(ctx, base, o)
	var f *probeFailure
	if errors.As(err, &f) {
		fmt.Fprintln(stderr, "gateway probe:", f.msg)
		return f.code
	}
	if o.json {
		_, _ = stdout.Write(append(bytes.TrimSpace(body), '\n'))
	} else {
		printCapabilities(stdout, base, o.model, caps)
	}
	if caps.ToolsSupported {
		return probeTools
	}
	name, why := o.model, "does not support tools"
	if name == "" {
		name = caps.DefaultModel
	}
	if !caps.Known {
		why = "is not in the gateway's model table, so it does not promise tools"
	}
	fmt.Fprintf(stderr, "gateway probe: model %s %s\n", clip.Quote(name), why)
	return probeNoTools
}

// probeArgs reads the flags, before or after the one argument, the gateway's base URL.
func probeArgs(fs *flag.FlagSet, args []string) (*url.URL, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
	if len(rest) != 1 {
		return nil, fmt.Errorf("want the gateway's URL, e.g. http://127.0.0.1:8080, and no other argument; got %d arguments", len(rest))
	}
	u, err := url.Parse(rest[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not the gateway's URL, e.g. http://127.0.0.1:8080", rest[0])
	}
	return u, nil
}

// probe asks the gateway at base for the capabilities of o.model: the answer as it came,
// and read. A *probeFailure says why there is none.
func probe(ctx context.Context, base *url.URL, o *probeOptions) ([]byte, *core.Capabilities, error) {
	endpoint := base.JoinPath("llm-apps", "capabilities")
	if o.model != "" {
		endpoint.RawQuery = url.Values{"model": {o.model}}.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return nil, nil, &probeFailure{probeNoGateway, err.Error()}
	}
	req.Header.Set("Accept", "application/json")
	if o.key != "" {
		req.Header.Set("Authorization", "Bearer "+o.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, &probeFailure{probeNoGateway, "cannot reach the gateway: " + err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return nil, nil, &probeFailure{probeNoGateway, "the gateway's answer was cut: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, refusal(resp.StatusCode, body, o)
	}
	var caps core.Capabilities
	if err := json.Unmarshal(body, &caps); err != nil || caps.MaxTools < 1 {
		return nil, nil, &probeFailure{probeNoGateway, fmt.Sprintf("%s did not answer as an llm-gateway: its answer is not the capabilities JSON (%s)",
			endpoint.Redacted(), clip.Quote(string(body)))}
	}
	return body, &caps, nil
}

// refusal is the failure of a probe the gateway answered with status, in its error body
// (docs/PROTOCOL.md 5), or something else answered.
func refusal(status int, body []byte, o *probeOptions) error {
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if json.Unmarshal(body, &e) != nil || e.Code == "" {
		e.Error = "an answer that is not the gateway's error JSON: " + clip.Quote(string(body))
	}
	switch {
	case status == http.StatusNotFound && e.Code == "not_found" && o.model != "" && strings.HasPrefix(e.Error, "model "):
		return &probeFailure{probeNoTools, e.Error}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		hint := "; give a key with --key"
		if o.key != "" {
			hint = "; is --key right?"
		}
		return &probeFailure{probeNoGateway, fmt.Sprintf("the gateway refused the probe (%d, authentication): %s%s", status, e.Error, hint)}
	}
	return &probeFailure{probeNoGateway, fmt.Sprintf("the gateway answered %d: %s", status, e.Error)}
}

// printCapabilities writes caps as a table.
func printCapabilities(w io.Writer, base *url.URL, model string, caps *core.Capabilities) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if model == "" {
		model = caps.DefaultModel + " (the default model)"
	}
	row := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	row("gateway", base.Redacted())
	row("model", model)
	known := "yes"
	if !caps.Known {
		known = "no: not in the gateway's model table; tools are not promised, Bedrock decides"
	}
	row("known", known)
	row("tools", yesNo(caps.ToolsSupported))
	row("streaming tools", yesNo(caps.StreamingTools))
	row("tool_choice", list(caps.ToolChoice))
	row("max tools", fmt.Sprint(caps.MaxTools))
	if f := caps.Flags; f != nil {
		row("reasoning", yesNo(f.Reasoning))
		row("prompt caching", yesNo(f.PromptCaching))
		row("strict tools", yesNo(f.StrictTools))
		row("structured output", yesNo(f.StructuredOutput))
		row("images", yesNo(f.Images))
		row("documents", yesNo(f.Documents))
	}
	row("stream formats", list(caps.StreamingFormats))
	row("surfaces", list(caps.Surfaces))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "models\tknown\ttools\tstreaming tools\ttool_choice (Bedrock's)")
	for _, m := range caps.Models {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, yesNo(m.Known), yesNo(m.Tools), yesNo(m.StreamingTools), list(m.ToolChoice))
	}
	_ = tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func list(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	return strings.Join(items, ", ")
}
