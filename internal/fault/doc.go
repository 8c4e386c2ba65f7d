// Package fault owns the gateway's errors once: the refusals of a client's request, each
// naming the field it is about ([RequestError], built by [Refuse]); the sentinels of
// failures the gateway raises itself; the [Kind] each failure is answered as, with its
// status code in the contract's vocabulary; and [Classify], the one function that decides
// how an error is answered.
//
// It knows no transport and no upstream (docs/PROTOCOL.md 5): each surface maps a Kind to
// its own status and body with one table (the HTTP status of Nirmata REST and OpenAI's API
// in internal/httpx, OpenAI's error type in internal/openai, the gRPC status in
// internal/grpcapi), and the upstream client reads its own exception codes
// (internal/bedrock), its errors being [Classified]. So this package imports neither
// net/http, gRPC nor the client.
package fault
