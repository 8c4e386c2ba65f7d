// Package anthropic serves Anthropic's Messages API (docs/PROTOCOL.md 15) on the chat
// core: POST /v1/messages, unary or as server-sent events, POST
// /v1/messages/count_tokens, and GET /v1/models in Anthropic's list shape. It is a surface
// like the others (docs/SURFACES.md): it decodes the body into the chat model, hands it to
// the core, and encodes the message object, the stream's events and errors in Anthropic's
// shapes.
//
// One Anthropic message may become several chat messages (a user message's tool_result
// blocks each become a tool message), so the decoder keeps where each chat message came
// from, and the refusals of the translator, which name chat-model paths
// ("messages[4].tool_calls[0].function.arguments"), are answered with the Anthropic path
// the client wrote ("messages.3.content.1.input").
package anthropic
