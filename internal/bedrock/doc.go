// Package bedrock is the gateway's upstream: Converse and ConverseStream wire structs that
// mirror Bedrock Runtime's REST JSON, and a lean client that signs with SigV4 (or a
// Bedrock API key), retries with the SDK's retry policy, and decodes streams. Its SigV4
// signer and event stream framing are its own, for the one request and stream shape it
// has: the signer is held equal to aws-sdk-go-v2's v4.Signer byte for byte by tests, the
// framing to aws/protocol/eventstream's decoder by a differential fuzz target.
//
// Requests, answers and stream event payloads are the declared structs of wire.go, encoded
// and decoded with json/v2 (github.com/go-json-experiment/json), the gateway's one JSON
// library. Only the event payloads, decoded on the goroutine that relays a stream and whose
// stack must stay small, are read by hand on its jsontext (eventjson.go), held to exactly
// what json.Unmarshal decodes by a differential test and fuzz target.
//
// The generated bedrockruntime client is not used on the hot path: per call it costs about
// twice the CPU of this client. It remains the reference for the wire structs, and the tests
// use it to prove the simulator speaks Bedrock's wire.
package bedrock
