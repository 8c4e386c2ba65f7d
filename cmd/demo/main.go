// Command demo runs an agent's tool loop against the gateway on its embedded Bedrock
// simulator four times and prints what each run costs, turn by turn, at the price table in
// package report (make demo; docs/PROTOCOL.md 11 and 12):
//
//  1. prompt caching off;
//  2. prompt caching auto (the default): the gateway places the cache points;
//  3. the same with extended thinking on, through the official openai-go client, whose
//     message.ToParam() drops the thinking blocks: the gateway puts them back from its
//     reasoning cache, so thinking stays on every turn;
//  4. the same with the reasoning cache off: thinking is turned off for each tool turn
//     instead of sending a history Bedrock would refuse.
//
// The loop is what kubectl-ai-like agents do: one system prompt and ten tools, a task
// that needs ten tool calls, parallel_tool_calls false so the model calls one tool per
// turn, every answer sent back as the client library builds it. Nothing leaves the
// machine: the gateway and the simulator run in this process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/cmd/demo/report"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "demo (make demo): what an agent's ten-step tool loop costs with prompt caching off and on,\nand with thinking through a client that drops the thinking blocks; takes no flags.")
	}
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	var r report.Runs
	for _, s := range []struct {
		run      *report.Run
		args     []string
		thinking bool
	}{
		{&r.CachingOff, []string{"--prompt-caching=off"}, false},
		{&r.CachingOn, nil, false},
		{&r.ThinkingKept, nil, true},
		{&r.ThinkingLost, []string{"--reasoning-cache=max_entries=0"}, true},
	} {
		var err error
		if *s.run, err = loop(report.Sonnet4.ModelID, s.args, s.thinking); err != nil {
			return fmt.Errorf("gateway %s: %w", strings.Join(s.args, " "), err)
		}
	}
	return report.Write(os.Stdout, report.Sonnet4, r)
}

// loop starts a gateway with args, runs the agent's loop on it to the final answer, and
// stops the gateway.
func loop(model string, args []string, thinking bool) (report.Run, error) {
	run := report.Run{Thinking: thinking}
	args = append([]string{"--sim", "--http-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0", "--log-level=error"}, args...)
	cfg, err := config.Load(args, func(string) string { return "" })
	if err != nil {
		return run, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.New(ctx, cfg, zap.NewNop())
	if err != nil {
		cancel()
		return run, fmt.Errorf("the gateway did not start: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	a := g.Addrs()

	client := openai.NewClient(option.WithBaseURL("http://"+a.HTTP+"/v1/"), option.WithAPIKey("demo"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:             model,
		Messages:          []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(systemPrompt), openai.UserMessage(task)},
		Tools:             tools(),
		ParallelToolCalls: openai.Bool(false),
	}
	if thinking {
		params.ReasoningEffort = shared.ReasoningEffortLow
	}
	for range 20 {
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&httpResp))
		if err != nil {
			return run, err
		}
		u := resp.Usage
		var details struct {
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		}
		_ = json.Unmarshal([]byte(u.PromptTokensDetails.RawJSON()), &details)
		read := u.PromptTokensDetails.CachedTokens
		turn := report.Turn{
			Usage: report.Usage{
				Full:       u.PromptTokens - read - details.CacheWriteTokens,
				CacheRead:  read,
				CacheWrite: details.CacheWriteTokens,
				Output:     u.CompletionTokens,
			},
			Thinking: httpResp.Header.Get("X-Gateway-Thinking"),
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) > 0 {
			turn.Tool = msg.ToolCalls[0].Function.Name
		}
		run.Turns = append(run.Turns, turn)
		if len(msg.ToolCalls) == 0 {
			return run, nil
		}
		// The agent sends the answer back as its client library builds it: ToParam drops
		// the thinking blocks the gateway returned.
		params.Messages = append(params.Messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage(toolOutput(call.Function.Name), call.ID))
		}
	}
	return run, errors.New("the loop did not end in 20 turns")
}

// task names the ten tools, which the simulator's model calls one per turn, in order.
var task = "The checkout service in namespace shop returns 502s since the last deploy. Investigate: call " +
	strings.Join(toolNames, ", ") + ", then tell me the cause and the fix."

var toolNames = []string{"get_pods", "get_events", "describe_pod", "get_logs", "get_deployments",
	"get_services", "get_endpoints", "get_nodes", "top_pods", "get_ingresses"}

// tools are ten kubectl-like tools with the schemas and descriptions an agent sends
// every turn: with the system prompt, the prefix the prompt cache is for.
func tools() []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, len(toolNames))
	for i, name := range toolNames {
		out[i] = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name,
			Description: openai.String("Runs the kubectl command behind " + name + " read-only against the current cluster context " +
				"and returns its output as text, truncated to 200 lines. Use it to gather evidence; it never changes the cluster. " +
				"Prefer narrow selectors: a namespace, a label selector or a resource name, so the output stays small and relevant."),
			Parameters: shared.FunctionParameters{
				"type": "object",
				"properties": map[string]any{
					"namespace": map[string]any{"type": "string", "description": "The namespace to look in; empty for the context's default namespace."},
					"selector":  map[string]any{"type": "string", "description": "A label selector such as app=checkout,tier=web; empty for every object."},
					"name":      map[string]any{"type": "string", "description": "One object's name, when the question is about one object."},
					"output":    map[string]any{"type": "string", "enum": []string{"wide", "yaml", "json", "name"}, "description": "The output format."},
				},
				"required": []string{"namespace"},
			},
		})
	}
	return out
}

// toolOutput is what the agent's tool returns: a few hundred bytes, as kubectl would.
func toolOutput(name string) string {
	return name + ` output:
NAME                        READY   STATUS             RESTARTS   AGE
checkout-7d9f8b6c5d-4xk2p   0/1     CrashLoopBackOff   7          14m
checkout-7d9f8b6c5d-9mz7q   0/1     CrashLoopBackOff   7          14m
cart-5f6d7c8b9-kq2lw        1/1     Running            0          3d
Warning  BackOff  pod/checkout-7d9f8b6c5d-4xk2p  Back-off restarting failed container
Error: env PAYMENTS_URL not set; exiting`
}

// systemPrompt is an agent's standing instructions, sent unchanged every turn.
var systemPrompt = strings.Repeat(`You are a Kubernetes troubleshooting assistant working for a platform team. You investigate
with read-only tools, one step at a time, and explain what you find in plain words. Rules:
- Gather evidence before you conclude: pods, events, logs, and the objects that route traffic.
- Never guess a cause the evidence does not show; say what else you would need to know.
- Quote the exact lines of output that support each finding.
- Propose the smallest fix that addresses the cause, with the command or manifest change.
- Keep answers short: a summary line, the evidence, the fix.
`, 8)
