package bedrocksim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithydocument "github.com/aws/smithy-go/document"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const claude = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// startSim serves sim over real HTTP and returns the generated SDK client pointed at it.
func startSim(t testing.TB, sim *Server) (*bedrockruntime.Client, string) {
	t.Helper()
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	t.Cleanup(sim.Close) // runs first: releases hanging requests so ts.Close can finish
	return newClient(t, ts.URL), ts.URL
}

// newClient is the generated SDK client set up as the tests of every package should: static
// fake credentials, one attempt, and the HTTP client of NewSDKHTTPClient.
//
// Concurrent ConverseStream calls need one client each: all streams of a client share one
// event-stream codec whose scratch fields they write without a lock (aws/smithy-go#714, in
// smithy-go v1.28.8). The race is harmless in effect, but -race reports it.
func newClient(t testing.TB, url string) *bedrockruntime.Client {
	hc := NewSDKHTTPClient()
	t.Cleanup(hc.CloseIdleConnections)
	return bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
		BaseEndpoint:     aws.String(url),
		HTTPClient:       hc,
		RetryMaxAttempts: 1,
	})
}

func userText(s string) types.Message {
	return types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: s}}}
}

func tool(name, schema string) types.Tool {
	var doc map[string]any
	if err := json.Unmarshal([]byte(schema), &doc); err != nil {
		panic(err)
	}
	return &types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name:        aws.String(name),
		Description: aws.String("Test tool " + name),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(doc)},
	}}
}

const weatherSchema = `{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"},"when":{"type":"string","format":"date-time"},"detailed":{"type":"boolean"}},"required":["location"]}`
const timeSchema = `{"type":"object","properties":{"zone":{"type":"string"},"offset":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}}}}`
const noArgsSchema = `{"type":"object","properties":{}}`

var weatherArgs = map[string]any{"location": "example", "unit": "celsius", "days": float64(42), "when": "2025-01-01T12:00:00Z", "detailed": true}

func toolConfig(tools ...types.Tool) *types.ToolConfiguration {
	return &types.ToolConfiguration{Tools: tools}
}

// inputOf decodes a toolUse input document through JSON, so numbers compare as float64.
func inputOf(t *testing.T, d document.Interface) map[string]any {
	t.Helper()
	raw, err := d.MarshalSmithyDocument()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func converse(t *testing.T, client *bedrockruntime.Client, in *bedrockruntime.ConverseInput) *bedrockruntime.ConverseOutput {
	t.Helper()
	if in.ModelId == nil {
		in.ModelId = aws.String(claude)
	}
	out, err := client.Converse(t.Context(), in)
	require.NoError(t, err)
	return out
}

func outputMessage(t *testing.T, out *bedrockruntime.ConverseOutput) types.Message {
	t.Helper()
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	require.True(t, ok, "output is %T", out.Output)
	return msg.Value
}

func TestConverseText(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	out := converse(t, client, &bedrockruntime.ConverseInput{Messages: []types.Message{userText("Hi there, how are you?")}})
	msg := outputMessage(t, out)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "Hello from the Bedrock simulator. You said: Hi there, how are you?", msg.Content[0].(*types.ContentBlockMemberText).Value)
	assert.Equal(t, types.ConversationRoleAssistant, msg.Role)
	assert.Equal(t, types.StopReasonEndTurn, out.StopReason)
	require.NotNil(t, out.Usage)
	assert.Positive(t, *out.Usage.InputTokens)
	assert.Positive(t, *out.Usage.OutputTokens)
	assert.Equal(t, *out.Usage.InputTokens+*out.Usage.OutputTokens, *out.Usage.TotalTokens)
	require.NotNil(t, out.Metrics)
	assert.Positive(t, *out.Metrics.LatencyMs)
}

func TestConverseMaxTokens(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	out := converse(t, client, &bedrockruntime.ConverseInput{
		Messages:        []types.Message{userText("Tell me a long story about a lighthouse keeper.")},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(2)},
	})
	assert.Equal(t, types.StopReasonMaxTokens, out.StopReason)
	assert.Equal(t, "Hello fr", outputMessage(t, out).Content[0].(*types.ContentBlockMemberText).Value)
}

func TestConverseToolCall(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	out := converse(t, client, &bedrockruntime.ConverseInput{
		Messages:   []types.Message{userText("What's the weather in Paris? Use get_weather.")},
		ToolConfig: toolConfig(tool("get_weather", weatherSchema), tool("get_time", timeSchema)),
	})
	assert.Equal(t, types.StopReasonToolUse, out.StopReason)
	msg := outputMessage(t, out)
	require.Len(t, msg.Content, 2)
	assert.Equal(t, "I'll call get_weather.", msg.Content[0].(*types.ContentBlockMemberText).Value)
	use := msg.Content[1].(*types.ContentBlockMemberToolUse).Value
	assert.Equal(t, "get_weather", *use.Name)
	assert.Regexp(t, `^tooluse_[A-Za-z0-9]{22}$`, *use.ToolUseId)
	assert.Equal(t, weatherArgs, inputOf(t, use.Input))

	// Decoding the document itself (not through JSON) gives the SDK's own types.
	var direct map[string]any
	require.NoError(t, use.Input.UnmarshalSmithyDocument(&direct))
	days, ok := direct["days"].(smithydocument.Number)
	require.True(t, ok, "days is %T", direct["days"])
	n, err := days.Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(42), n)
}

func TestConverseParallelToolCalls(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	out := converse(t, client, &bedrockruntime.ConverseInput{
		// Named in the other order than the tools list: calls follow the tools list.
		Messages:   []types.Message{userText("Call get_time and get_weather, please. Don't forget-me-not, get_weatherly or budget.")},
		ToolConfig: toolConfig(tool("get_weather", weatherSchema), tool("get", noArgsSchema), tool("get_time", timeSchema)),
	})
	msg := outputMessage(t, out)
	require.Len(t, msg.Content, 3)
	assert.Equal(t, "I'll call get_weather and get_time.", msg.Content[0].(*types.ContentBlockMemberText).Value)
	first := msg.Content[1].(*types.ContentBlockMemberToolUse).Value
	second := msg.Content[2].(*types.ContentBlockMemberToolUse).Value
	assert.Equal(t, "get_weather", *first.Name)
	assert.Equal(t, "get_time", *second.Name)
	assert.NotEqual(t, *first.ToolUseId, *second.ToolUseId)
	assert.Equal(t, weatherArgs, inputOf(t, first.Input))
	assert.Equal(t, map[string]any{"zone": "example", "offset": 1.5, "tags": []any{"example"}}, inputOf(t, second.Input))
}

func TestConverseToolChoice(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	tools := []types.Tool{tool("get_weather", weatherSchema), tool("get_time", timeSchema)}
	for name, tc := range map[string]struct {
		choice types.ToolChoice
		want   string
	}{
		"any":  {&types.ToolChoiceMemberAny{}, "get_weather"},
		"tool": {&types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("get_time")}}, "get_time"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := converse(t, client, &bedrockruntime.ConverseInput{
				Messages:   []types.Message{userText("Do something useful.")},
				ToolConfig: &types.ToolConfiguration{Tools: tools, ToolChoice: tc.choice},
			})
			msg := outputMessage(t, out)
			require.Len(t, msg.Content, 2)
			assert.Equal(t, tc.want, *msg.Content[1].(*types.ContentBlockMemberToolUse).Value.Name)
		})
	}
}

func toolUse(id, name string, input map[string]any) types.ContentBlock {
	return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String(id), Name: aws.String(name), Input: document.NewLazyDocument(input)}}
}

func TestConverseToolResult(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	out := converse(t, client, &bedrockruntime.ConverseInput{
		Messages: []types.Message{
			userText("Weather and time in Paris? Use get_weather and get_time."),
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
				&types.ContentBlockMemberText{Value: "I'll call get_weather and get_time."},
				toolUse("tooluse_1", "get_weather", map[string]any{"location": "Paris"}),
				toolUse("tooluse_2", "get_time", map[string]any{}),
			}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
				&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tooluse_1"), Content: []types.ToolResultContentBlock{
					&types.ToolResultContentBlockMemberJson{Value: document.NewLazyDocument(map[string]any{"temp": 21})}}}},
				&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tooluse_2"), Content: []types.ToolResultContentBlock{
					&types.ToolResultContentBlockMemberText{Value: "14:05 CET"}}}},
				// Text after the results is fine, even for Claude.
				&types.ContentBlockMemberText{Value: "Thanks!"},
			}},
		},
		ToolConfig: toolConfig(tool("get_weather", weatherSchema), tool("get_time", timeSchema)),
	})
	assert.Equal(t, types.StopReasonEndTurn, out.StopReason)
	msg := outputMessage(t, out)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, `Tool results received: get_weather → {"temp":21}; get_time → 14:05 CET`, msg.Content[0].(*types.ContentBlockMemberText).Value)
}

// streamed is a ConverseStream answer gathered from stream.Events().
type streamed struct {
	order      []string // event kinds in order
	text       string
	textDeltas int
	tools      []streamedTool
	stopReason types.StopReason
	usage      *types.TokenUsage
	err        error
	// Reasoning: its text, signature and redacted data as the deltas carried them, and every
	// block event as kind@contentBlockIndex.
	reasoning string
	signature string
	redacted  []byte
	blocks    []string
}

type streamedTool struct {
	id, name  string
	fragments []string
}

func collect(t testing.TB, stream *bedrockruntime.ConverseStreamOutput) streamed {
	t.Helper()
	es := stream.GetStream()
	defer es.Close()
	var s streamed
	byIndex := map[int32]int{}
	for ev := range es.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			s.order = append(s.order, "messageStart:"+string(v.Value.Role))
		case *types.ConverseStreamOutputMemberContentBlockStart:
			s.order = append(s.order, "start")
			s.blocks = append(s.blocks, fmt.Sprintf("start@%d", *v.Value.ContentBlockIndex))
			tu := v.Value.Start.(*types.ContentBlockStartMemberToolUse).Value
			byIndex[*v.Value.ContentBlockIndex] = len(s.tools)
			s.tools = append(s.tools, streamedTool{id: *tu.ToolUseId, name: *tu.Name})
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				s.order = append(s.order, "text")
				s.text += d.Value
				s.textDeltas++
			case *types.ContentBlockDeltaMemberToolUse:
				s.order = append(s.order, "input")
				i := byIndex[*v.Value.ContentBlockIndex]
				s.tools[i].fragments = append(s.tools[i].fragments, *d.Value.Input)
			case *types.ContentBlockDeltaMemberReasoningContent:
				switch r := d.Value.(type) {
				case *types.ReasoningContentBlockDeltaMemberText:
					s.order = append(s.order, "reasoning")
					s.reasoning += r.Value
				case *types.ReasoningContentBlockDeltaMemberSignature:
					s.order = append(s.order, "signature")
					s.signature += r.Value
				case *types.ReasoningContentBlockDeltaMemberRedactedContent:
					s.order = append(s.order, "redacted")
					s.redacted = append(s.redacted, r.Value...)
				}
			}
			s.blocks = append(s.blocks, fmt.Sprintf("%s@%d", s.order[len(s.order)-1], *v.Value.ContentBlockIndex))
		case *types.ConverseStreamOutputMemberContentBlockStop:
			s.order = append(s.order, "stop")
			s.blocks = append(s.blocks, fmt.Sprintf("stop@%d", *v.Value.ContentBlockIndex))
		case *types.ConverseStreamOutputMemberMessageStop:
			s.order = append(s.order, "messageStop")
			s.stopReason = v.Value.StopReason
		case *types.ConverseStreamOutputMemberMetadata:
			s.order = append(s.order, "metadata")
			s.usage = v.Value.Usage
		default:
			s.order = append(s.order, "unknown")
		}
	}
	s.err = es.Err()
	return s
}

// compress folds runs of equal kinds, so an order reads "text+" instead of N entries.
func compress(order []string) []string {
	var out []string
	for i, o := range order {
		if i > 0 && order[i-1] == o {
			if !strings.HasSuffix(out[len(out)-1], "+") {
				out[len(out)-1] += "+"
			}
			continue
		}
		out = append(out, o)
	}
	return out
}

func TestConverseStreamText(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)
	assert.Equal(t, []string{"messageStart:assistant", "text+", "stop", "messageStop", "metadata"}, compress(s.order))
	assert.Equal(t, "Hello from the Bedrock simulator. You said: Hi", s.text)
	assert.GreaterOrEqual(t, s.textDeltas, 3)
	assert.Equal(t, types.StopReasonEndTurn, s.stopReason)
	require.NotNil(t, s.usage)
	assert.Equal(t, *s.usage.InputTokens+*s.usage.OutputTokens, *s.usage.TotalTokens)
}

func TestConverseStreamToolCalls(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	msgs := []types.Message{userText("Use get_weather, get_time and ping.")}
	tc := toolConfig(tool("get_weather", weatherSchema), tool("get_time", timeSchema), tool("ping", noArgsSchema))

	unary := outputMessage(t, converse(t, client, &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: msgs, ToolConfig: tc}))
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: msgs, ToolConfig: tc})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)

	assert.Equal(t, []string{"messageStart:assistant", "text+", "stop",
		"start", "input+", "stop", // get_weather
		"start", "input+", "stop", // get_time
		"start", "stop", // ping: no arguments, no input delta
		"messageStop", "metadata"}, compress(s.order))
	assert.Equal(t, "I'll call get_weather, get_time and ping.", s.text)
	assert.Equal(t, types.StopReasonToolUse, s.stopReason)
	require.Len(t, s.tools, 3)
	require.Len(t, unary.Content, 4)
	for i, st := range s.tools {
		use := unary.Content[i+1].(*types.ContentBlockMemberToolUse).Value
		assert.Equal(t, *use.ToolUseId, st.id, "same request, same ids")
		assert.Equal(t, *use.Name, st.name)
		if st.name == "ping" {
			assert.Empty(t, st.fragments)
			continue
		}
		assert.Greater(t, len(st.fragments), 2, "arguments arrive in several fragments")
		var args map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.Join(st.fragments, "")), &args))
		assert.Equal(t, inputOf(t, use.Input), args)
	}
	require.NotNil(t, s.usage)
	assert.Positive(t, *s.usage.OutputTokens)
}

func TestConverseStreamDelays(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{FirstTokenDelay: 50 * time.Millisecond, DeltaDelay: 5 * time.Millisecond}))
	start := time.Now()
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(claude), Messages: []types.Message{userText("one two three four five")}})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)
	// 50 ms to the first event, then 5 ms before every delta after the first.
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond+time.Duration(s.textDeltas-1)*5*time.Millisecond)
}

func TestInferenceProfileARN(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	for _, id := range []string{
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
		"amazon.nova-pro-v1:0",
	} {
		out := converse(t, client, &bedrockruntime.ConverseInput{ModelId: aws.String(id), Messages: []types.Message{userText("Hi")}})
		assert.Equal(t, types.StopReasonEndTurn, out.StopReason, id)
	}
}

// errorCode is how the gateway classifies errors: by smithy.APIError.ErrorCode().
func errorCode(t *testing.T, err error) string {
	t.Helper()
	require.Error(t, err)
	var apiErr smithy.APIError
	require.True(t, errors.As(err, &apiErr), "not an API error: %v", err)
	return apiErr.ErrorCode()
}

func errorMessageOf(t *testing.T, err error) string {
	t.Helper()
	var apiErr smithy.APIError
	require.True(t, errors.As(err, &apiErr), "not an API error: %v", err)
	return apiErr.ErrorMessage()
}

func TestUnaryFaults(t *testing.T) {
	t.Parallel()
	for kind, code := range map[FaultKind]string{
		FaultThrottle:      "ThrottlingException",
		FaultUnavailable:   "ServiceUnavailableException",
		FaultInternal:      "InternalServerException",
		FaultModelNotReady: "ModelNotReadyException",
	} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			sim := New(Options{Faults: []Fault{{Kind: kind, Times: 1}}})
			client, _ := startSim(t, sim)
			in := &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}}
			_, err := client.Converse(t.Context(), in)
			assert.Equal(t, code, errorCode(t, err))
			// Times: 1 means the next request goes through, for unary and stream alike.
			_, err = client.Converse(t.Context(), in)
			require.NoError(t, err)

			sim = New(Options{Faults: []Fault{{Kind: kind, Times: 1}}})
			client, _ = startSim(t, sim)
			_, err = client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
			assert.Equal(t, code, errorCode(t, err), "before any byte of a stream")
			assert.Equal(t, int64(1), sim.Requests())
		})
	}
}

func TestFaultModes(t *testing.T) {
	t.Parallel()
	streamOnly := true
	client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultThrottle, Stream: &streamOnly}}}))
	_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	require.NoError(t, err, "a stream-only fault leaves Converse alone")
	_, err = client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	assert.Equal(t, "ThrottlingException", errorCode(t, err))
	_, err = client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	assert.Equal(t, "ThrottlingException", errorCode(t, err), "Times 0 means every request")
}

// TestFaultScopes: a fault with model= applies only to requests to that model (as named,
// or its foundation model), one with region= only to requests signed for that region, as
// the real SDK signs them; the rest go through and use up nothing.
func TestFaultScopes(t *testing.T) {
	t.Parallel()
	const nova = "us.amazon.nova-pro-v1:0"
	converse := func(client *bedrockruntime.Client, model string) error {
		_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: []types.Message{userText("Hi")}})
		return err
	}
	inRegion := func(url, region string) *bedrockruntime.Client {
		c := newClient(t, url)
		return bedrockruntime.New(c.Options(), func(o *bedrockruntime.Options) { o.Region = region })
	}

	sim := New(Options{Faults: []Fault{{Kind: FaultThrottle, Model: claude, Times: 1}, {Kind: FaultInternal, Model: "amazon.nova-pro-v1:0"}}})
	client, _ := startSim(t, sim)
	require.NoError(t, converse(client, "anthropic.claude-3-haiku-20240307-v1:0"), "another model")
	assert.Equal(t, "ThrottlingException", errorCode(t, converse(client, claude)))
	require.NoError(t, converse(client, claude), "times=1 counted only the request to its model")
	assert.Equal(t, "InternalServerException", errorCode(t, converse(client, nova)), "the foundation model takes in its profiles")

	sim = New(Options{Faults: []Fault{{Kind: FaultUnavailable, Region: "us-east-1"}}})
	_, url := startSim(t, sim)
	east, west := inRegion(url, "us-east-1"), inRegion(url, "us-west-2")
	assert.Equal(t, "ServiceUnavailableException", errorCode(t, converse(east, claude)))
	require.NoError(t, converse(west, claude), "signed for us-west-2")
	out, err := west.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	require.NoError(t, err)
	require.NoError(t, out.GetStream().Close())
}

func TestSigningRegion(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"AWS4-HMAC-SHA256 Credential=AKID/20250101/us-west-2/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc": "us-west-2",
		"AWS4-HMAC-SHA256 Credential=AKID/20250101/eu-central-1/bedrock/aws4_request":                                            "eu-central-1",
		"AWS4-HMAC-SHA256 Credential=AKID/20250101/bedrock/aws4_request, Signature=abc":                                          "",
		"AWS4-HMAC-SHA256 SignedHeaders=host":                                                                                    "",
		"Bearer bedrock-api-key":                                                                                                 "",
		"":                                                                                                                       "",
	} {
		assert.Equal(t, want, SigningRegion(h), h)
	}
}

func TestHangFault(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultHang}}}))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}

func TestStreamException(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ exceptionType, code string }{
		{"", "ThrottlingException"},
		{"throttlingException", "ThrottlingException"},
		{"ValidationException", "ValidationException"},
		{"internalServerException", "InternalServerException"},
		{"modelStreamErrorException", "ModelStreamErrorException"},
		{"serviceUnavailableException", "ServiceUnavailableException"},
	} {
		t.Run(tc.code+"/"+tc.exceptionType, func(t *testing.T) {
			t.Parallel()
			client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultStreamException, ExceptionType: tc.exceptionType}}}))
			stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
				ModelId: aws.String(claude), Messages: []types.Message{userText("Tell me about the sea")}})
			require.NoError(t, err, "the exception comes after the 200")
			s := collect(t, stream)
			assert.Equal(t, []string{"messageStart:assistant", "text", "text"}, s.order)
			assert.Equal(t, tc.code, errorCode(t, s.err))
			assert.NotEmpty(t, errorMessageOf(t, s.err))
		})
	}
}

// TestStreamTruncate asserts what docs/BEDROCK.md B says the SDK does with a stream that ends
// before messageStop: Events() closes and Err() is nil, so the consumer must notice the
// missing messageStop itself.
func TestStreamTruncate(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultTruncate, AfterEvents: 5}}}))
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(claude), Messages: []types.Message{userText("Tell me about the sea")}})
	require.NoError(t, err)
	s := collect(t, stream)
	assert.Equal(t, []string{"messageStart:assistant", "text", "text", "text", "text"}, s.order)
	assert.NoError(t, s.err)
	assert.Empty(t, s.stopReason)
}

// TestStreamFaultsSkipUnary: in-stream faults do not apply to Converse and are not used up
// by it.
func TestStreamFaultsSkipUnary(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultTruncate, Times: 1}}}))
	_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	require.NoError(t, err)
	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
	require.NoError(t, err)
	assert.NotContains(t, collect(t, stream).order, "messageStop")
}

// TestFaultTimesConcurrent: Times counts exactly under concurrent requests.
func TestFaultTimesConcurrent(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: FaultInternal, Times: 7}}}))
	errs := make(chan error, 40)
	for range 40 {
		go func() {
			_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
			errs <- err
		}()
	}
	failed := 0
	for range 40 {
		if err := <-errs; err != nil {
			assert.Equal(t, "InternalServerException", errorCode(t, err))
			failed++
		}
	}
	assert.Equal(t, 7, failed)
}

func TestUnknownModel(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	_, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String("acme.gpt-9"), Messages: []types.Message{userText("Hi")}})
	assert.Equal(t, "ResourceNotFoundException", errorCode(t, err))
	assert.Equal(t, "Could not resolve the foundation model from the provided model identifier.", errorMessageOf(t, err))
}

// post sends a raw request, as a client that is not the SDK would.
func post(t *testing.T, url, path, auth, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, got
}

func TestRawHTTP(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	const ok = `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`
	const path = "/model/" + claude + "/converse"
	for _, tc := range []struct {
		name, path, auth, body string
		status                 int
		code, message          string
	}{
		{"no auth", path, "", ok, 403, "AccessDeniedException", ""},
		{"basic auth", path, "Basic dTpw", ok, 403, "AccessDeniedException", ""},
		{"bearer", path, "Bearer ABSKexample", ok, 200, "", ""},
		{"extraneous key", path, "Bearer k", `{"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`, 400, "ValidationException",
			"Malformed input request: #/messages/0/content/0: extraneous key [type] is not permitted, reformat your input and try again."},
		{"malformed json", path, "Bearer k", `{"messages":[`, 400, "ValidationException", ""},
		{"unknown operation", "/model/" + claude + "/invoke", "Bearer k", ok, 404, "UnknownOperationException", ""},
		{"unknown model", "/model/acme.x/converse-stream", "Bearer k", ok, 404, "ResourceNotFoundException",
			"Could not resolve the foundation model from the provided model identifier."},
		{"unknown id of a known family", "/model/us.anthropic.claude-sonnet-9-20300101-v1:0/converse", "Bearer k", ok, 404, "ResourceNotFoundException",
			"Could not resolve the foundation model from the provided model identifier."},
		{"model without tools", "/model/amazon.titan-text-express-v1/converse", "Bearer k",
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}}}}]}}`,
			400, "ValidationException", "This model doesn't support tool use."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := post(t, url, tc.path, tc.auth, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode, string(body))
			assert.NotEmpty(t, resp.Header.Get("x-amzn-RequestId"))
			if tc.code == "" {
				return
			}
			assert.Equal(t, tc.code, resp.Header.Get("X-Amzn-ErrorType"))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var e struct{ Message string }
			require.NoError(t, json.Unmarshal(body, &e))
			if tc.message != "" {
				assert.Equal(t, tc.message, e.Message)
			}
			if tc.name == "malformed json" {
				assert.True(t, strings.HasPrefix(e.Message, "Malformed input request: "), e.Message)
			}
		})
	}
}

// TestDeterministic: the same request gets the same bytes, tool-call ids included.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	body := `{"messages":[{"role":"user","content":[{"text":"use get_weather & get_time <now>"}]}],"toolConfig":{"tools":[` +
		`{"toolSpec":{"name":"get_weather","inputSchema":{"json":` + weatherSchema + `}}},` +
		`{"toolSpec":{"name":"get_time","inputSchema":{"json":` + timeSchema + `}}}]}}`
	for _, op := range []string{"converse", "converse-stream"} {
		_, first := post(t, url, "/model/"+claude+"/"+op, "Bearer k", body)
		_, second := post(t, url, "/model/"+claude+"/"+op, "Bearer k", body)
		assert.Equal(t, first, second, op)
	}
	_, unary := post(t, url, "/model/"+claude+"/converse", "Bearer k", body)
	assert.Contains(t, string(unary), `"input":{"location":"example","unit":"celsius","days":42,"when":"2025-01-01T12:00:00Z","detailed":true}`,
		"arguments keep the schema's property order")
}

// TestValidationThroughSDK sends invalid requests built with the SDK's own types: the SDK
// checks only required members, so each reaches the simulator, which must refuse it with
// Bedrock's message.
func TestValidationThroughSDK(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{}))
	assistant := func(blocks ...types.ContentBlock) types.Message {
		return types.Message{Role: types.ConversationRoleAssistant, Content: blocks}
	}
	userBlocks := func(blocks ...types.ContentBlock) types.Message {
		return types.Message{Role: types.ConversationRoleUser, Content: blocks}
	}
	text := func(s string) types.ContentBlock { return &types.ContentBlockMemberText{Value: s} }
	result := func(id string, status types.ToolResultStatus, content ...types.ToolResultContentBlock) types.ContentBlock {
		if content == nil {
			content = []types.ToolResultContentBlock{}
		}
		return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(id), Status: status, Content: content}}
	}
	jsonResult := func(v any) types.ToolResultContentBlock {
		return &types.ToolResultContentBlockMemberJson{Value: document.NewLazyDocument(v)}
	}
	cache := &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}}
	weatherTool := tool("get_weather", weatherSchema)
	call := assistant(toolUse("tooluse_a", "get_weather", map[string]any{}))

	for _, tc := range []struct {
		name  string
		model string
		in    bedrockruntime.ConverseInput
		want  string
	}{
		{"A1", claude, bedrockruntime.ConverseInput{Messages: []types.Message{assistant(text("Hi")), userText("Hi")}},
			"A conversation must start with a user message. Try again with a conversation that starts with a user message."},
		{"A2", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a"), userText("b")}},
			"A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."},
		{"A3", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a"), {Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{}}}},
			"The content field in the Message object at messages.1 is empty. Add a ContentBlock object to the content field and try again."},
		{"A4", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("  ")}},
			"The text field in the ContentBlock object at messages.0.content.0 is blank. Add text to the text field, and try again."},
		{"A5", claude, bedrockruntime.ConverseInput{Messages: []types.Message{{Role: "system", Content: []types.ContentBlock{text("Be brief")}}}},
			"Malformed input request: #/messages/0/role: system is not a valid enum value, reformat your input and try again."},
		{"A7", opus46, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a"), assistant(text("b"))}},
			"This model does not support assistant message prefill. The conversation must end with a user message."},
		{"A8", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")}, ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{}}},
			"1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"A9", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")}, ToolConfig: toolConfig(weatherTool, tool("Complete Session", noArgsSchema))},
			"1 validation error detected: Value 'Complete Session' at 'toolConfig.tools.2.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		{"A11", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")}, ToolConfig: toolConfig(tool("x", `{"type":"array"}`))},
			"The value at toolConfig.tools.0.toolSpec.inputSchema.json.type must be one of the following: object."},
		{"A12", llama, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")}, ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{weatherTool}, ToolChoice: &types.ToolChoiceMemberAny{}}},
			"This model doesn't support the toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again"},
		{"A13", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a"), call, userBlocks(result("tooluse_a", "", jsonResult(map[string]any{"ok": true})))}},
			"The toolConfig field must be defined when using toolUse and toolResult content blocks."},
		{"A14", claude, bedrockruntime.ConverseInput{ToolConfig: toolConfig(weatherTool), Messages: []types.Message{userText("a"),
			assistant(toolUse("call:1", "get_weather", map[string]any{})), userBlocks(result("call:1", "", jsonResult(map[string]any{})))}},
			"2 validation errors detected: Value at 'messages.2.member.content.1.member.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+; Value at 'messages.3.member.content.1.member.toolResult.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		{"A15", claude, bedrockruntime.ConverseInput{ToolConfig: toolConfig(weatherTool), Messages: []types.Message{userText("a"), call, userText("where is it?")}},
			"Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a"},
		{"A16", claude, bedrockruntime.ConverseInput{ToolConfig: toolConfig(weatherTool), Messages: []types.Message{userText("a"), call,
			userBlocks(result("tooluse_a", "", jsonResult(map[string]any{})), result("tooluse_z", "", jsonResult(map[string]any{})))}},
			"The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn."},
		{"A17", claude, bedrockruntime.ConverseInput{ToolConfig: toolConfig(weatherTool), Messages: []types.Message{userText("a"), call,
			userBlocks(result("tooluse_a", "", jsonResult([]any{1, 2})))}},
			"The format of the value at messages.2.content.0.toolResult.content.0.json is invalid. Provide a json object for the field and try again."},
		{"A18", claude, bedrockruntime.ConverseInput{ToolConfig: toolConfig(weatherTool), Messages: []types.Message{userText("a"), call,
			userBlocks(result("tooluse_a", types.ToolResultStatusError))}},
			"The content field at messages.2.content.0.toolResult cannot be empty when status value is error."},
		{"A19", claude, bedrockruntime.ConverseInput{ToolConfig: toolConfig(weatherTool), Messages: []types.Message{userText("a"), call,
			userBlocks(text("here:"), result("tooluse_a", "", jsonResult(map[string]any{})))}},
			"messages.2.content: Conversation blocks and tool result blocks cannot be provided in the same turn."},
		{"A20 maxTokens", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")}, InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(0)}},
			"1 validation error detected: Value '0' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		{"A20 temperature with topP", sonnet45, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")},
			InferenceConfig: &types.InferenceConfiguration{Temperature: aws.Float32(0.5), TopP: aws.Float32(0.5)}},
			"`temperature` and `top_p` cannot both be specified for this model. Please use only one."},
		{"A22", claude, bedrockruntime.ConverseInput{Messages: []types.Message{userBlocks(text("a"), cache), assistant(text("b"), cache), userBlocks(text("c"), cache)},
			System:     []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "s"}, &types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}}},
			ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{weatherTool, &types.ToolMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}}}}},
			"The model returned the following errors: A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"no tool use", titan, bedrockruntime.ConverseInput{Messages: []types.Message{userText("a")}, ToolConfig: toolConfig(weatherTool)},
			"This model doesn't support tool use."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newClient(t, url)
			in := tc.in
			in.ModelId = aws.String(tc.model)
			_, err := client.Converse(t.Context(), &in)
			assert.Equal(t, "ValidationException", errorCode(t, err))
			assert.Equal(t, tc.want, errorMessageOf(t, err))

			// ConverseStream validates the same way, before the 200.
			_, err = client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, Messages: in.Messages,
				System: in.System, InferenceConfig: in.InferenceConfig, ToolConfig: in.ToolConfig})
			assert.Equal(t, "ValidationException", errorCode(t, err))
			assert.Equal(t, tc.want, errorMessageOf(t, err))
		})
	}
}

// TestStreamingToolUse: a model whose tool use works through Converse only (docs/BEDROCK.md
// F) refuses a toolConfig on ConverseStream, and streams without one.
func TestStreamingToolUse(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	msgs := []types.Message{userText("Use get_weather.")}
	tc := toolConfig(tool("get_weather", weatherSchema))
	for _, model := range []string{llama, mistral, "cohere.command-r-plus-v1:0", "us.meta.llama4-maverick-17b-instruct-v1:0"} {
		out := converse(t, client, &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: msgs, ToolConfig: tc})
		assert.Equal(t, types.StopReasonToolUse, out.StopReason, model)

		_, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(model), Messages: msgs, ToolConfig: tc})
		assert.Equal(t, "ValidationException", errorCode(t, err), model)
		assert.Equal(t, "This model doesn't support tool use in streaming mode.", errorMessageOf(t, err), model)

		stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(model), Messages: msgs})
		require.NoError(t, err, model)
		require.NoError(t, collect(t, stream).err, model)
	}
}

// TestStreamFaultBeforeMessageStop: a fault asked for after more events than the answer has
// still breaks the stream before messageStop.
func TestStreamFaultBeforeMessageStop(t *testing.T) {
	t.Parallel()
	for _, kind := range []FaultKind{FaultTruncate, FaultStreamException} {
		client, _ := startSim(t, New(Options{Faults: []Fault{{Kind: kind, AfterEvents: 1000}}}))
		stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
			ModelId: aws.String(claude), Messages: []types.Message{userText("Hi")}})
		require.NoError(t, err)
		s := collect(t, stream)
		assert.Equal(t, []string{"messageStart:assistant", "text+", "stop"}, compress(s.order), kind)
		if kind == FaultTruncate {
			assert.NoError(t, s.err)
		} else {
			assert.Equal(t, "ThrottlingException", errorCode(t, s.err))
		}
	}
}
