// Package toolcheck checks the arguments of a model's tool call against its tool's JSON
// Schema (docs/PROTOCOL.md 13.2) and words what it finds as violations a model can act on:
// "<JSON pointer into the arguments>: <rule>", the root written "/", at most
// MaxViolations per call, in a stable order, e.g.
//
//	/replicas: expected integer, got string
//	/: missing required property "filename"
//
// Schemas are compiled by github.com/santhosh-tekuri/jsonschema/v6: draft 2020-12 unless
// "$schema" names another draft (draft-07 is what most clients write), local "$ref"s
// resolved ("#/$defs/x", "#/definitions/x"), "format" not asserted (every format
// validates, "regex" included, on every draft), content keywords not asserted. Nothing is ever loaded: a
// "$ref" to another document, even a file, cannot compile, and a schema that cannot
// compile leaves its calls unchecked (the caller logs that once, when Cache.Schema says
// the failure is fresh).
//
// Measure bounds what a client's schema may cost before anything compiles it (Limits: its
// bytes, subschemas, members of one keyword, nesting, the chain of schemas evaluated at
// one place through $ref, regular expressions, numbers), in one linear pass. A check
// counts what the library would do for the arguments at hand before it validates them,
// each evaluation weighed by what its keywords and its value cost, and leaves a call whose
// count is beyond a bound unchecked (cost.go).
//
// Most calls are valid and most tool schemas use a few keywords (type, properties,
// required, boolean additionalProperties, items, string enums, integer bounds, lengths): for
// those, a call is first read as tokens and judged without the library and without
// decoding it (fast.go); only what that pass is not sure is valid goes to the library, so
// every violation is the library's, and the cost counted is the same either way.
//
// A Cache holds compiled schemas by content, shared by every request, so a call's check
// costs a hash of its tool's schema, a map lookup and the validation itself. It is bounded
// by an estimate of the memory its schemas keep, computed from their measure, and it
// compiles within a request's Budget, so one request cannot spend unbounded CPU on fresh
// schemas.
//
// A violation names argument values only through its pointer: a rule quotes the schema
// ("must be one of \"dev\", \"prod\""), never the arguments, so the strings are safe to
// log and to send back to the model.
package toolcheck
