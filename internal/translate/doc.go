// Package translate turns the gateway's chat request (internal/chat) into a Bedrock
// Converse request and a Converse answer back into a chat response. It is pure: no
// network, no goroutines, no logging; what it repairs it reports in [Stats] for the caller
// to log and count. It knows no transport: each transport maps its wire to and from the
// chat model.
//
// Request applies docs/BEDROCK.md sections C and K: it turns any history a client may send
// (system messages mid-way, parallel tool calls split over several assistant or tool
// messages, unanswered calls (also at the very end of the history), orphan results, empty
// content, tool names with dots, foreign tool-call ids, a leading assistant turn, images and
// documents as data URLs) into a conversation Bedrock accepts, or refuses it
// ([fault.Refuse]) naming the field by its 0-based JSON path. Tool arguments, JSON results and tool schemas travel as raw JSON: validated and
// compacted, never decoded, so numbers keep every digit and objects their key order.
// Marshal the result with [bedrock.MarshalRequest], which writes that raw JSON as it is
// rather than re-encoding it.
//
// Response, FinishReason and Usage apply section D. The [Plan] that Request returns maps
// the Bedrock-safe tool names and ids back to the client's, for unary and stream answers
// alike.
package translate
