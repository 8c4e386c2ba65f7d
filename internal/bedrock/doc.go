// Package bedrock is the gateway's upstream: Converse and ConverseStream wire structs that
// mirror Bedrock Runtime's REST JSON, and a lean client that signs with aws-sdk-go-v2's
// SigV4 signer (or a Bedrock API key), retries with the SDK's retry policy, and decodes
// streams with its own event stream framing, held equal to aws/protocol/eventstream's
// decoder by a differential fuzz target.
//
// The generated bedrockruntime client is not used on the hot path: per call it costs about
// twice the CPU of this client. It remains the reference for the wire structs, and the tests
// use it to prove the simulator speaks Bedrock's wire.
package bedrock
