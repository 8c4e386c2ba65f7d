// Package server wires the gateway's transports: the gRPC ChatService (with reflection and
// grpc.health.v1), and the REST API on a grpc-gateway mux. Both call one transport-neutral
// [Service], and both map errors through one classification ([classify]), so a failure
// gets the same code on every transport.
package server
