package core

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// textUpstream answers every call with one text, unary or streamed.
type textUpstream struct{ text string }

func (u textUpstream) Converse(context.Context, string, *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	return &bedrock.ConverseResponse{StopReason: bedrock.StopEndTurn, Usage: &bedrock.TokenUsage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2},
		Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{bedrock.TextBlock(u.text)}}}}, nil
}

func (u textUpstream) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	var body bytes.Buffer
	enc := eventstream.NewEncoder()
	half := len(u.text) / 2
	for _, ev := range []struct{ typ, payload string }{
		{bedrock.EventMessageStart, `{"role":"assistant"}`},
		{bedrock.EventContentBlockDelta, fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"text":%q}}`, u.text[:half])},
		{bedrock.EventContentBlockDelta, fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"text":%q}}`, u.text[half:])},
		{bedrock.EventContentBlockStop, `{"contentBlockIndex":0}`},
		{bedrock.EventMessageStop, `{"stopReason":"end_turn"}`},
		{bedrock.EventMetadata, `{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`},
	} {
		var msg eventstream.Message
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(ev.typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = []byte(ev.payload)
		if err := enc.Encode(&body, msg); err != nil {
			return nil, err
		}
	}
	return bedrock.NewEventStream(io.NopCloser(&body)), nil
}

// TestJSONObjectAnswersChecked: an answer to a json_object request that is not one JSON
// object is returned unchanged, and the call's Result says so, unary and streamed; the
// observation that follows counts it and logs it without its text (internal/observe).
func TestJSONObjectAnswersChecked(t *testing.T) {
	t.Parallel()
	for text, invalid := range map[string]bool{
		`{"a": [1, 2]}`:            false,
		"Sure! {\"a\": 1}":         true,
		"```json\n{\"a\": 1}\n```": true,
	} {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q streamed=%v", text, streamed), func(t *testing.T) {
				t.Parallel()
				s := New(textUpstream{text}, Options{DefaultModel: model, MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20,
					UpstreamTimeout: time.Minute, MaxConcurrent: 2}, zap.NewNop())
				req := &chat.Request{ID: "r1", Messages: []chat.Message{{Role: chat.RoleUser, Content: "go"}},
					ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONObject}}
				var res Result
				var got string
				if streamed {
					st, _, err := s.Stream(t.Context(), req)
					require.NoError(t, err)
					defer st.Close()
					var out []chat.Event
					for err == nil {
						out, err = st.Next(out)
					}
					require.Equal(t, io.EOF, err)
					got = streamText(out)
					res = st.Result()
				} else {
					resp, r, err := s.Chat(t.Context(), req)
					require.NoError(t, err)
					got, res = resp.Text, r
				}
				assert.Equal(t, text, got, "returned unchanged")
				assert.Equal(t, invalid, res.FormatInvalid)
			})
		}
	}
	// Without json_object nothing is checked.
	s := New(textUpstream{"plain text"}, Options{DefaultModel: model, MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 2}, zap.NewNop())
	_, res, err := s.Chat(t.Context(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "go"}}})
	require.NoError(t, err)
	assert.False(t, res.FormatInvalid)
}

func streamText(evs []chat.Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		if e.Kind == chat.EventContent {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// refusingUpstream refuses every call with a ValidationException.
type refusingUpstream struct{ message string }

func (u refusingUpstream) err() error {
	return &bedrock.APIError{Code: bedrock.CodeValidation, Message: u.message, StatusCode: 400}
}

func (u refusingUpstream) Converse(context.Context, string, *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	return nil, u.err()
}

func (u refusingUpstream) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	return nil, u.err()
}

// TestSchemaRefusalNamesTheSchema: Bedrock refusing the outputConfig schema is a 400 with
// its text and param response_format.json_schema.schema, unary and streamed; other
// refusals, and refusals of requests without outputConfig, name no field.
func TestSchemaRefusalNamesTheSchema(t *testing.T) {
	t.Parallel()
	const sonnet45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	const refused = "output_config.format.schema: For 'number' type, properties maximum, minimum are not supported"
	schema := &chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":"object"}`)}
	for _, tt := range []struct {
		name, model, message, param string
		format                      *chat.ResponseFormat
	}{
		{"the schema refused", sonnet45, refused, "response_format.json_schema.schema", schema},
		{"another refusal", sonnet45, "A conversation must start with a user message.", "", schema},
		{"no outputConfig sent", model, refused, "", schema},
		{"no response_format", sonnet45, refused, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(refusingUpstream{tt.message}, Options{DefaultModel: tt.model, MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20,
				UpstreamTimeout: time.Minute, MaxConcurrent: 2}, zap.NewNop())
			req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "go"}}, ResponseFormat: tt.format}
			_, _, err := s.Chat(t.Context(), req)
			f := fault.Classify(t.Context(), err)
			assert.Equal(t, fault.KindInvalid, f.Kind)
			assert.Equal(t, tt.message, f.Message, "Bedrock's text")
			assert.Equal(t, tt.param, f.Param)

			_, _, err = s.Stream(t.Context(), req)
			assert.Equal(t, tt.param, fault.Classify(t.Context(), err).Param, "streamed")
		})
	}
	// Only a ValidationException is blamed on a field.
	_, names, err := translate.Request(&chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "go"}}, ResponseFormat: schema},
		capabilities.Lookup(sonnet45))
	require.NoError(t, err)
	throttled := &bedrock.APIError{Code: bedrock.CodeThrottling, Message: refused}
	assert.Same(t, error(throttled), blame(names, throttled))
}

// model is the model the tests call: Claude, which takes every feature they use.
const model = "anthropic.claude-sonnet-4-20250514-v1:0"
