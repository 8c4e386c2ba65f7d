package bedrocksim

import (
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// Keys each JSON object of a Converse request may carry, from the service model
// (aws-sdk-go-v2 bedrockruntime schemas). Bedrock's schema validator refuses any other key
// (docs/BEDROCK.md A6), which is how an OpenAI-shaped {"type":"text","text":…} block fails.
var (
	requestKeys = []string{"messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig",
		"additionalModelRequestFields", "promptVariables", "additionalModelResponseFieldPaths",
		"requestMetadata", "performanceConfig", "serviceTier", "outputConfig"}
	messageKeys = []string{"role", "content"}
	blockKeys   = []string{"text", "image", "document", "video", "audio", "toolUse", "toolResult",
		"guardContent", "cachePoint", "reasoningContent", "citationsContent", "searchResult",
		"toolAddition", "toolRemoval"}
	toolUseKeys       = []string{"toolUseId", "name", "input", "type"}
	toolResultKeys    = []string{"toolUseId", "content", "status", "type"}
	resultContentKeys = []string{"json", "text", "image", "document", "video", "searchResult"}
	systemKeys        = []string{"text", "guardContent", "cachePoint"}
	toolConfigKeys    = []string{"tools", "toolChoice"}
	toolKeys          = []string{"toolSpec", "systemTool", "cachePoint"}
	toolSpecKeys      = []string{"name", "description", "inputSchema", "strict"}
	inputSchemaKeys   = []string{"json"}
	toolChoiceKeys    = []string{"auto", "any", "tool"}
	inferenceKeys     = []string{"maxTokens", "temperature", "topP", "stopSequences"}
	cachePointKeys    = []string{"type", "ttl"}
	reasoningKeys     = []string{"reasoningText", "redactedContent"}
	reasoningTextKeys = []string{"text", "signature"}
	outputConfigKeys  = []string{"textFormat", "effort"}
	textFormatKeys    = []string{"type", "structure"}
	structureKeys     = []string{"jsonSchema"}
	jsonSchemaKeys    = []string{"schema", "name", "description"}
)

// checkRaw walks the JSON of a request (already known to be valid JSON) for what decoding
// would hide: keys that are not part of the shape (A6), unions with other than one member,
// and values of the wrong JSON type where an object or array is due.
func checkRaw(body []byte) *apiError {
	top, err := object("#", body, requestKeys)
	if err != nil {
		return err
	}
	if raw, ok := lookup(top, "messages"); ok {
		msgs, err := array("#/messages", raw)
		if err != nil {
			return err
		}
		for i, rawMsg := range msgs {
			ptr := fmt.Sprintf("#/messages/%d", i)
			msg, err := object(ptr, rawMsg, messageKeys)
			if err != nil {
				return err
			}
			content, _ := lookup(msg, "content")
			blocks, err := array(ptr+"/content", content)
			if err != nil {
				return err
			}
			for j, rawBlock := range blocks {
				if err := checkRawBlock(fmt.Sprintf("%s/content/%d", ptr, j), rawBlock); err != nil {
					return err
				}
			}
		}
	}
	if raw, ok := lookup(top, "system"); ok {
		blocks, err := array("#/system", raw)
		if err != nil {
			return err
		}
		for i, rawBlock := range blocks {
			ptr := fmt.Sprintf("#/system/%d", i)
			block, err := union(ptr, rawBlock, systemKeys)
			if err != nil {
				return err
			}
			if err := checkRawCachePoint(ptr, block); err != nil {
				return err
			}
		}
	}
	if raw, ok := lookup(top, "inferenceConfig"); ok && !isNull(raw) {
		if _, err := object("#/inferenceConfig", raw, inferenceKeys); err != nil {
			return err
		}
	}
	if raw, ok := lookup(top, "toolConfig"); ok && !isNull(raw) {
		if err := checkRawToolConfig(raw); err != nil {
			return err
		}
	}
	if raw, ok := lookup(top, "outputConfig"); ok && !isNull(raw) {
		if err := checkRawOutputConfig(raw); err != nil {
			return err
		}
	}
	return nil
}

// checkRawOutputConfig checks the shape of outputConfig (docs/BEDROCK.md I1): textFormat has
// a type and a structure, the structure is a union whose one member is jsonSchema, and
// jsonSchema's schema (required), name and description are strings.
func checkRawOutputConfig(raw jsontext.Value) *apiError {
	oc, err := object("#/outputConfig", raw, outputConfigKeys)
	if err != nil {
		return err
	}
	if v, ok := lookup(oc, "effort"); ok && v.Kind() != '"' {
		return malformed("#/outputConfig/effort", "expected type: String, found: "+jsonKind(v))
	}
	v, ok := lookup(oc, "textFormat")
	if !ok || isNull(v) {
		return nil
	}
	const ptr = "#/outputConfig/textFormat"
	tf, err := object(ptr, v, textFormatKeys)
	if err != nil {
		return err
	}
	for _, key := range textFormatKeys {
		if _, ok := lookup(tf, key); !ok {
			return malformed(ptr, "required key ["+key+"] not found")
		}
	}
	if typ, _ := lookup(tf, "type"); typ.Kind() != '"' {
		return malformed(ptr+"/type", "expected type: String, found: "+jsonKind(typ))
	} else if s, _ := stringValue(typ); s != formatJSONSchema {
		return malformed(ptr+"/type", s+" is not a valid enum value")
	}
	structure, _ := lookup(tf, "structure")
	st, err := union(ptr+"/structure", structure, structureKeys)
	if err != nil {
		return err
	}
	js, _ := lookup(st, "jsonSchema")
	def, err := object(ptr+"/structure/jsonSchema", js, jsonSchemaKeys)
	if err != nil {
		return err
	}
	if _, ok := lookup(def, "schema"); !ok {
		return malformed(ptr+"/structure/jsonSchema", "required key [schema] not found")
	}
	for _, m := range def {
		if m.value.Kind() != '"' {
			return malformed(ptr+"/structure/jsonSchema/"+m.key, "expected type: String, found: "+jsonKind(m.value))
		}
	}
	return nil
}

func checkRawBlock(ptr string, raw jsontext.Value) *apiError {
	block, err := union(ptr, raw, blockKeys)
	if err != nil {
		return err
	}
	if err := checkRawCachePoint(ptr, block); err != nil {
		return err
	}
	if v, ok := lookup(block, "reasoningContent"); ok {
		rc, err := union(ptr+"/reasoningContent", v, reasoningKeys)
		if err != nil {
			return err
		}
		if v, ok := lookup(rc, "reasoningText"); ok {
			text, err := object(ptr+"/reasoningContent/reasoningText", v, reasoningTextKeys)
			if err != nil {
				return err
			}
			if _, ok := lookup(text, "text"); !ok {
				return malformed(ptr+"/reasoningContent/reasoningText", "required key [text] not found")
			}
		}
	}
	if v, ok := lookup(block, "toolUse"); ok {
		if _, err := object(ptr+"/toolUse", v, toolUseKeys); err != nil {
			return err
		}
	}
	if v, ok := lookup(block, "toolResult"); ok {
		result, err := object(ptr+"/toolResult", v, toolResultKeys)
		if err != nil {
			return err
		}
		if content, ok := lookup(result, "content"); ok {
			items, err := array(ptr+"/toolResult/content", content)
			if err != nil {
				return err
			}
			for k, item := range items {
				if _, err := union(fmt.Sprintf("%s/toolResult/content/%d", ptr, k), item, resultContentKeys); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkRawToolConfig(raw jsontext.Value) *apiError {
	tc, err := object("#/toolConfig", raw, toolConfigKeys)
	if err != nil {
		return err
	}
	if v, ok := lookup(tc, "tools"); ok {
		tools, err := array("#/toolConfig/tools", v)
		if err != nil {
			return err
		}
		for i, rawTool := range tools {
			ptr := fmt.Sprintf("#/toolConfig/tools/%d", i)
			tool, err := union(ptr, rawTool, toolKeys)
			if err != nil {
				return err
			}
			if err := checkRawCachePoint(ptr, tool); err != nil {
				return err
			}
			rawSpec, ok := lookup(tool, "toolSpec")
			if !ok {
				continue
			}
			spec, err := object(ptr+"/toolSpec", rawSpec, toolSpecKeys)
			if err != nil {
				return err
			}
			if s, ok := lookup(spec, "strict"); ok && !isNull(s) && s.Kind() != 't' && s.Kind() != 'f' {
				return malformed(ptr+"/toolSpec/strict", "expected type: Boolean, found: "+jsonKind(s))
			}
			if s, ok := lookup(spec, "inputSchema"); ok {
				if _, err := union(ptr+"/toolSpec/inputSchema", s, inputSchemaKeys); err != nil {
					return err
				}
			}
		}
	}
	if v, ok := lookup(tc, "toolChoice"); ok && !isNull(v) {
		if _, err := union("#/toolConfig/toolChoice", v, toolChoiceKeys); err != nil {
			return err
		}
	}
	return nil
}

// checkRawCachePoint checks the cachePoint member of a union, if it has one: an object of
// type and ttl, type required.
func checkRawCachePoint(ptr string, union []member) *apiError {
	v, ok := lookup(union, "cachePoint")
	if !ok {
		return nil
	}
	cp, err := object(ptr+"/cachePoint", v, cachePointKeys)
	if err != nil {
		return err
	}
	if _, ok := lookup(cp, "type"); !ok {
		return malformed(ptr+"/cachePoint", "required key [type] not found")
	}
	return nil
}

// object reads a JSON object whose keys must all be in allowed.
func object(ptr string, raw jsontext.Value, allowed []string) ([]member, *apiError) {
	members, ok := objectMembers(raw)
	if !ok {
		return nil, malformed(ptr, "expected type: JSONObject, found: "+jsonKind(raw))
	}
	for _, m := range members {
		if !slices.Contains(allowed, m.key) {
			return nil, malformed(ptr, "extraneous key ["+m.key+"] is not permitted")
		}
	}
	return members, nil
}

// union reads an object that must hold exactly one of the allowed keys.
func union(ptr string, raw jsontext.Value, allowed []string) ([]member, *apiError) {
	members, err := object(ptr, raw, allowed)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if isNull(m.value) {
			return nil, malformed(ptr+"/"+m.key, "expected a value, found: null")
		}
	}
	return members, memberCount(ptr, len(members))
}

// array reads a JSON array; null or absent counts as empty (the decoded form decides
// whether empty is allowed).
func array(ptr string, raw jsontext.Value) ([]jsontext.Value, *apiError) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	elems, ok := arrayElements(raw)
	if !ok {
		return nil, malformed(ptr, "expected type: JSONArray, found: "+jsonKind(raw))
	}
	return elems, nil
}

func isNull(raw jsontext.Value) bool { return raw.Kind() == 'n' }
