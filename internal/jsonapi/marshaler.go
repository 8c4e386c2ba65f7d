package jsonapi

import (
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// fallback handles every value the contract does not shape: grpc-gateway's own error
// bodies (google.rpc.Status), GetCapabilitiesRequest, non-proto values.
var fallback = &runtime.JSONPb{
	MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
	UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
}

// Marshaler is the grpc-gateway marshaler of the REST API's generated routes, which serve
// the capabilities (docs/PROTOCOL.md 4): it writes Capabilities in the contract's shape and
// leaves everything else to protojson (proto field names, unpopulated fields emitted,
// unknown fields discarded). Chat has its own handler, which uses DecodeChatRequest and
// the Append functions directly. The zero value is ready to use and safe for concurrent use.
type Marshaler struct{}

var _ runtime.Marshaler = Marshaler{}

// Marshal implements [runtime.Marshaler].
func (Marshaler) Marshal(v any) ([]byte, error) {
	if c, ok := v.(*llmgatewayv1.Capabilities); ok {
		return AppendCapabilities(make([]byte, 0, 256), c), nil
	}
	return fallback.Marshal(v)
}

// Unmarshal implements [runtime.Marshaler].
func (Marshaler) Unmarshal(data []byte, v any) error { return fallback.Unmarshal(data, v) }

// NewDecoder implements [runtime.Marshaler].
func (Marshaler) NewDecoder(r io.Reader) runtime.Decoder { return fallback.NewDecoder(r) }

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
