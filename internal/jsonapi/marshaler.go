package jsonapi

import (
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// fallback handles every value the contract does not shape: grpc-gateway's own error
// bodies (google.rpc.Status), GetCapabilitiesRequest, non-proto values.
var fallback = &runtime.JSONPb{
	MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
	UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
}

// Marshaler is the grpc-gateway marshaler of the REST API: it writes and reads the
// contract's JSON shapes (PROTOCOL.md 3-4) for the chat messages and falls back to
// protojson (proto field names, unpopulated fields emitted, unknown fields discarded)
// for anything else. The zero value is ready to use and safe for concurrent use.
//
// grpc-gateway wraps each message of a server stream as {"result": msg}; Marshal unwraps
// that for *ChatStreamEvent, so a stream served through the mux has the 3.2 framing.
type Marshaler struct{}

var (
	_ runtime.Marshaler         = Marshaler{}
	_ runtime.Delimited         = Marshaler{}
	_ runtime.StreamContentType = Marshaler{}
)

// Marshal implements [runtime.Marshaler].
func (Marshaler) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *llmgatewayv1.ChatResponse:
		return AppendChatResponse(make([]byte, 0, 256), m), nil
	case *llmgatewayv1.Capabilities:
		return AppendCapabilities(make([]byte, 0, 256), m), nil
	case *llmgatewayv1.ChatStreamEvent:
		return marshalEvent(m), nil
	case map[string]any:
		if e, ok := m["result"].(*llmgatewayv1.ChatStreamEvent); ok && len(m) == 1 {
			return marshalEvent(e), nil
		}
	}
	return fallback.Marshal(v)
}

// marshalEvent is the event's line without its '\n': grpc-gateway writes the Delimiter.
func marshalEvent(e *llmgatewayv1.ChatStreamEvent) []byte {
	b := AppendStreamEvent(make([]byte, 0, 128), e)
	return b[:len(b)-1]
}

// Unmarshal implements [runtime.Marshaler]. It resets v first, as protojson does.
func (Marshaler) Unmarshal(data []byte, v any) error {
	if req, ok := v.(*llmgatewayv1.ChatRequest); ok {
		proto.Reset(req)
		return decodeInto(data, req)
	}
	return fallback.Unmarshal(data, v)
}

// NewDecoder implements [runtime.Marshaler]. A *ChatRequest takes the rest of r as its
// body (an empty body is an error, not io.EOF: a chat request has to say something).
func (m Marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	var other runtime.Decoder
	return runtime.DecoderFunc(func(v any) error {
		if req, ok := v.(*llmgatewayv1.ChatRequest); ok {
			body, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			return m.Unmarshal(body, req)
		}
		if other == nil {
			other = fallback.NewDecoder(r)
		}
		return other.Decode(v)
	})
}

// NewEncoder implements [runtime.Marshaler]. Each value is followed by '\n', like
// runtime.JSONPb's encoder.
func (m Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// ContentType implements [runtime.Marshaler].
func (Marshaler) ContentType(any) string { return "application/json" }

// StreamContentType implements [runtime.StreamContentType]: server streams are JSONL
// (PROTOCOL.md 3.2).
func (Marshaler) StreamContentType(any) string { return "application/x-ndjson" }

// Delimiter implements [runtime.Delimited].
func (Marshaler) Delimiter() []byte { return []byte("\n") }
