// Package stream is the response half of the translation for streams: it turns a Bedrock
// ConverseStream into the gateway's stream of chat.Event values (docs/PROTOCOL.md 3.2,
// docs/BEDROCK.md E), by the request's translation plan (translate.Plan), as
// translate.Response does for a whole answer; each surface encodes the events in its wire
// (JSONL, Nirmata chunked events, SSE, gRPC). It is pure: no HTTP, no goroutines, no
// logging. The core reads the upstream; the transports write to the client.
//
// A Machine holds the state of one stream, keyed on Bedrock's contentBlockIndex and never
// on arrival order. Tool calls get dense ordinals 0, 1, 2 … in the order of their
// contentBlockStart, so parallel calls whose deltas interleave never share state. The
// events it produces are:
//
//	content          a non-empty text fragment (empty deltas are dropped)
//	reasoning        a non-empty fragment of reasoning text, as it comes
//	reasoning_block  a whole reasoning block (its text, or its redacted data, with its
//	                 signature) once it ends: at its contentBlockStop, at another block's
//	                 first event, or at the end of the stream; Reasoning returns them all
//	tool_call        a header {id, type, function.name} without arguments, at
//	                 contentBlockStart, then one non-empty function.arguments fragment per
//	                 toolUse input delta; a tool block that stops without one gets a "{}"
//	                 fragment
//	tool_call_end    the call's arguments are complete (for the chunked format's ToolStart;
//	                 JSONL and gRPC have no such event and skip it)
//	done             finish_reason and usage, once messageStop and metadata have both come
//	                 (or at the end of the stream if metadata never came); nothing follows
//	                 it
//
// Tool and tool-call names go back to the client's through the request's translate.Plan.
// The synthetic answer tool of a json_schema request (docs/PROTOCOL.md 13.3) is not a tool
// call: its input fragments are content events, and the text the model writes is held to
// the end of the answer and dropped if the tool was called (translate.TextHold), so a
// stream's content is the unary answer's text. Its calls take no ordinal, so the client's
// calls keep dense ones.
//
// Errors (all wrap fault.ErrUpstream, which fault.Classify answers as 502 / Unavailable):
// a malformed_model_output or malformed_tool_use stop reason; a stream that ends without
// messageStop (ErrTruncated); Bedrock breaking its own protocol (tool input for a block
// that never started or already stopped, a block started twice, a tool call without an
// id). Errors the upstream reader returns (in-stream exceptions, cut frames) pass through
// Step unchanged. After an error the stream is over: the transport writes its error event
// with the code fault.Classify gives, and nothing more.
//
// Tool arguments are not validated as JSON. Bedrock checks the model's tool input itself
// and ends the stream with malformed_tool_use when it is not valid, which is an error
// here; re-parsing every call's arguments would cost a copy and a scan per call for a case
// Bedrock already reports.
//
// Design of the chunked format. A chunked ToolStart line needs the complete arguments, and
// the best moment for it is the tool block's contentBlockStop, which produces nothing in
// JSONL or gRPC. The Machine marks that moment with a tool_call_end event; the chunked
// encoder (internal/nirmata) writes the ToolStart line then. It needs no guessing (a "flush when the next
// header or text arrives" rule would send incomplete arguments when parallel calls
// interleave); a call without a marker gets its ToolStart at done, still correct. A call
// whose arguments are not valid JSON at its marker waits for done: with
// malformed_tool_use Bedrock stops the block before it reports the stop reason, and the
// client must not get a ToolStart for a call that then fails.
package stream
