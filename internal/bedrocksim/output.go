package bedrocksim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Structured output and strict tools (docs/BEDROCK.md I). checkRawOutputConfig has checked
// the shape of outputConfig; checkOutputConfig and checkStrictTools apply the rules that
// depend on the model and on the schema, and record the schema the answer follows in
// req.format.
//
// Texts: I2's number text, I4 and I7 are BEDROCK.md's verbatim (I7 is the simulator's own by
// analogy with A12, as BEDROCK.md records). The others are the simulator's own: I2's other
// keywords in the words of its number text; the schema string that is not JSON, or not an
// object schema, in the words of A11; Anthropic's form checked as its validator words the
// rest of additionalModelRequestFields ("<path>: <problem>"); I5's keywords in a text of their
// own, as BEDROCK.md records only that they are refused.

// outputSchemaPath is how Bedrock names the schema of structured output in its refusals: the
// path of Anthropic's field, to which outputConfig.textFormat is passed (I2).
const outputSchemaPath = "output_config.format.schema"

// checkOutputConfig applies docs/BEDROCK.md I1, I2, I4 and I7 to outputConfig.textFormat and
// to Claude's output_config.format, and records the schema in req.format.
func checkOutputConfig(m ModelInfo, req *converseRequest) *apiError {
	var native jsontext.Value
	if oc := req.OutputConfig; oc != nil && oc.TextFormat != nil {
		if !m.StructuredOutput {
			return validation("This model doesn't support the outputConfig.textFormat field. Remove outputConfig.textFormat and try again")
		}
		// checkRawOutputConfig made sure jsonSchema is there.
		schema := jsontext.Value(oc.TextFormat.Structure.JSONSchema.Schema)
		const at = "outputConfig.textFormat.structure.jsonSchema.schema"
		if !schema.IsValid(lenient) {
			return validation("The value at " + at + " is not valid JSON. Provide the JSON schema as a string and try again.")
		}
		if !isObjectSchema(schema) {
			return validation("The value at " + at + ".type must be one of the following: object.")
		}
		if err := checkOutputSchema(schema); err != nil {
			return err
		}
		native = schema
	}
	anthropic, err := anthropicFormat(m, req)
	if err != nil {
		return err
	}
	if native != nil && anthropic != nil {
		return validation("outputConfig.textFormat and additionalModelRequestFields.output_config.format cannot both be set. Remove one of them and try again.")
	}
	req.format = native
	if anthropic != nil {
		req.format = anthropic
	}
	return nil
}

// isObjectSchema reports whether schema is a JSON object whose type is "object".
func isObjectSchema(schema jsontext.Value) bool {
	members, ok := objectMembers(schema)
	typ, _ := lookup(members, "type")
	return ok && string(typ) == `"object"`
}

// anthropicFormat reads Claude's own form of structured output,
// additionalModelRequestFields.output_config.format = {"type": "json_schema", "schema": {…}}.
// A model without structured output refuses it as an extra input (I4, seen on Opus 4.7); one
// with it takes it as it takes outputConfig.textFormat. It returns the schema, or nil when the
// field is absent. A non-object output_config is left to checkReasoning, which refuses it.
func anthropicFormat(m ModelInfo, req *converseRequest) (jsontext.Value, *apiError) {
	if !isAnthropic(m) || len(req.AdditionalModelRequestFields) == 0 {
		return nil, nil
	}
	fields, _ := objectMembers(req.AdditionalModelRequestFields)
	oc, ok := lookup(fields, "output_config")
	if !ok {
		return nil, nil
	}
	members, _ := objectMembers(oc)
	format, ok := lookup(members, "format")
	if !ok || isNull(format) {
		return nil, nil
	}
	if !m.StructuredOutput {
		return nil, validation("output_config.format: Extra inputs are not permitted")
	}
	fm, ok := objectMembers(format)
	if !ok {
		return nil, validation("output_config.format: Input should be a valid dictionary or object to extract fields from")
	}
	typ, ok := lookup(fm, "type")
	if !ok || isNull(typ) {
		return nil, validation("output_config.format.type: Field required")
	}
	if s, _ := stringValue(typ); s != formatJSONSchema {
		return nil, validation(fmt.Sprintf("output_config.format: Input tag '%s' found using 'type' does not match any of the expected tags: 'json_schema'", jsonText(typ)))
	}
	const path = "output_config.format.json_schema."
	for _, mem := range fm {
		if mem.key != "type" && mem.key != "schema" {
			return nil, validation(path + mem.key + ": Extra inputs are not permitted")
		}
	}
	schema, ok := lookup(fm, "schema")
	switch {
	case !ok || isNull(schema):
		return nil, validation(path + "schema: Field required")
	case schema.Kind() != '{':
		return nil, validation(path + "schema: Input should be a valid dictionary")
	case !isObjectSchema(schema):
		return nil, validation(outputSchemaPath + ": The root schema must have type 'object'.")
	}
	if err := checkOutputSchema(schema); err != nil {
		return nil, err
	}
	return schema, nil
}

// numberBounds are the numeric keywords structured output refuses (I2), in the order the
// refusal lists them.
var numberBounds = []string{"exclusiveMaximum", "exclusiveMinimum", "maximum", "minimum"}

// checkOutputSchema refuses the keywords of I2 wherever they stand in schema: the bounds of
// numbers and integers, maxItems, and minItems above 1.
func checkOutputSchema(schema jsontext.Value) *apiError {
	return walkSchema(schema, "", 0, func(members []member, _ string) *apiError {
		var found []string
		for _, key := range numberBounds {
			if _, ok := lookup(members, key); ok {
				found = append(found, key)
			}
		}
		if len(found) > 0 {
			typ := "number"
			if ts := schemaTypes(members); slices.Contains(ts, "integer") && !slices.Contains(ts, "number") {
				typ = "integer"
			}
			return validation(fmt.Sprintf("%s: For '%s' type, %s not supported", outputSchemaPath, typ, propertiesAre(found)))
		}
		if _, ok := lookup(members, "maxItems"); ok {
			return validation(outputSchemaPath + ": For 'array' type, property maxItems is not supported")
		}
		if n, ok := numberOf(members, "minItems"); ok && n > 1 {
			return validation(outputSchemaPath + ": For 'array' type, property minItems only supports the values 0 and 1")
		}
		return nil
	})
}

// propertiesAre lists keywords as I2's text does: "property minimum is", "properties maximum,
// minimum are".
func propertiesAre(keys []string) string {
	if len(keys) == 1 {
		return "property " + keys[0] + " is"
	}
	return "properties " + strings.Join(keys, ", ") + " are"
}

// strictRefused are the keywords a strict tool's schema may not use (I5).
var strictRefused = []string{"oneOf", "anyOf", "allOf", "not"}

// checkStrictTools applies I5 and I7 to the tools with toolSpec.strict true: the model must
// take strict tools, and their schemas must not combine subschemas.
func checkStrictTools(m ModelInfo, tc *toolConfiguration) *apiError {
	if tc == nil {
		return nil
	}
	for i, t := range tc.Tools {
		if t.ToolSpec == nil || !t.ToolSpec.strict() {
			continue
		}
		field := fmt.Sprintf("toolConfig.tools.%d.toolSpec.strict", i)
		if !m.StructuredOutput {
			return validation(fmt.Sprintf("This model doesn't support the %s field. Remove %s and try again", field, field))
		}
		err := walkSchema(t.ToolSpec.InputSchema.JSON, "", 0, func(members []member, ptr string) *apiError {
			for _, key := range strictRefused {
				if _, ok := lookup(members, key); ok {
					if ptr == "" {
						ptr = "/"
					}
					return validation(fmt.Sprintf("toolConfig.tools.%d.toolSpec.inputSchema.json: strict tools do not support the keyword %s (at %s). Remove it, or set toolSpec.strict to false, and try again.", i, key, ptr))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Keywords whose values hold subschemas (JSON Schema draft 2020-12, and draft-07's
// definitions and additionalItems).
var (
	schemaMaps    = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaLists   = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
	schemaSingles = []string{"additionalProperties", "items", "additionalItems", "contains", "not", "if", "then", "else",
		"propertyNames", "unevaluatedProperties", "unevaluatedItems"}
)

// walkSchema calls visit with schema and every subschema in it, depth first in the order
// written, each with its JSON pointer from the root ("" for the root, "/properties/a"); the
// first error stops the walk. Values that are not objects (true, false) and what lies deeper
// than maxSchemaDepth are not visited.
func walkSchema(schema jsontext.Value, ptr string, depth int, visit func(members []member, ptr string) *apiError) *apiError {
	members, ok := objectMembers(schema)
	if !ok || depth > maxSchemaDepth {
		return nil
	}
	if err := visit(members, ptr); err != nil {
		return err
	}
	for _, m := range members {
		at := ptr + "/" + escapePointer(m.key)
		var subs []jsontext.Value
		var where []string
		switch {
		case slices.Contains(schemaMaps, m.key):
			props, _ := objectMembers(m.value)
			for _, p := range props {
				subs, where = append(subs, p.value), append(where, at+"/"+escapePointer(p.key))
			}
		case slices.Contains(schemaLists, m.key), m.key == "items" && m.value.Kind() == '[':
			elems, _ := arrayElements(m.value)
			for i, e := range elems {
				subs, where = append(subs, e), append(where, fmt.Sprintf("%s/%d", at, i))
			}
		case slices.Contains(schemaSingles, m.key):
			subs, where = []jsontext.Value{m.value}, []string{at}
		}
		for i, sub := range subs {
			if err := walkSchema(sub, where[i], depth+1, visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// structured turns answer a into an answer of structured output (docs/PROTOCOL.md section 9):
// its text is JSON built from schema, compact, an instance of the schema. An answer that calls
// tools still calls them (the model may call tools before it answers), without its text: any
// text would have to follow the schema too.
func structured(a answer, schema jsontext.Value) answer {
	if len(a.Calls) > 0 {
		a.Text = ""
		return a
	}
	return answer{Text: string(exampleArgs(schema)), StopReason: stopEndTurn}
}
