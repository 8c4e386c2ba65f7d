package bedrocksim

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	sonnet46 = "us.anthropic.claude-sonnet-4-6"            // adaptive, efforts to high
	opus47   = "global.anthropic.claude-opus-4-7"          // adaptive only, no caching
	claude35 = "anthropic.claude-3-5-sonnet-20240620-v1:0" // no reasoning, no caching
	haiku35  = "anthropic.claude-3-5-haiku-20241022-v1:0"  // caching from 2,048 tokens
	nova2    = "us.amazon.nova-2-lite-v1:0"                // reasoningConfig
	gptOSS   = "openai.gpt-oss-120b-1:0"                   // reasoning_effort
	deepseek = "us.deepseek.v3-v1:0"                       // reasoning_config
	opus45ID = "anthropic.claude-opus-4-5-20251101-v1:0"   // another signing model
	sonnetID = "anthropic.claude-sonnet-4-20250514-v1:0"   // sonnet4's foundation model
	opus46ID = "anthropic.claude-opus-4-6-v1"              // opus46's foundation model
	opus47ID = "anthropic.claude-opus-4-7"                 // opus47's foundation model
	useA     = `{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{"city":"Paris"}}}`
	thinkOn  = `"thinking":{"type":"enabled","budget_tokens":2048}`
	adaptive = `"thinking":{"type":"adaptive"}`
	max4k    = `"inferenceConfig":{"maxTokens":4096}`
)

// fields is additionalModelRequestFields with the given members.
func fields(members ...string) string {
	return `"additionalModelRequestFields":{` + strings.Join(members, ",") + `}`
}

// join joins top-level members of a request.
func join(members ...string) string { return strings.Join(members, ",") }

func assistant(blocks ...string) string {
	return `{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`
}

// tagOf is the conversation tag of a conversation whose first user message says first.
func tagOf(first string) convTag {
	return conversationTag([]message{{Role: roleUser, Content: []contentBlock{{Text: &first}}}})
}

// signed is a thinking block as modelID would have answered it in the conversation that
// starts with first.
func signed(modelID, first, text string) string {
	return thinkingBlock(text, signThinking(modelID, tagOf(first), text))
}

func thinkingBlock(text, signature string) string {
	return `{"reasoningContent":{"reasoningText":{"text":` + strconv.Quote(text) + `,"signature":"` + signature + `"}}}`
}

// redacted is a redacted block as modelID would have answered it in the conversation that
// starts with first.
func redacted(modelID, first string) string {
	return redactedBlock(redactedData(modelID, tagOf(first), "hidden"))
}

func redactedBlock(data []byte) string {
	return `{"reasoningContent":{"redactedContent":"` + b64(data) + `"}}`
}

// toolTurn is a thinking request answering tooluse_a, whose call turn starts with blocks.
func toolTurn(blocks ...string) string {
	return reqWith(join(weatherTC, fields(thinkOn), max4k), hi, assistant(append(blocks, useA)...), user(resultA))
}

// refusal runs validate and returns Bedrock's message, "" when the request passes.
func refusal(t *testing.T, model, body string, stream bool) string {
	t.Helper()
	m, found := lookupModel(model)
	require.True(t, found, model)
	req, err := decodeRequest([]byte(body))
	if err == nil {
		err = validate(m, req, stream)
	}
	if err == nil {
		return ""
	}
	assert.Equal(t, codeValidation, err.Code)
	assert.Equal(t, http.StatusBadRequest, err.Status)
	return err.Message
}

const (
	g7 = "The model returned the following errors: messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`."
	g8 = "messages.1.content.0: Invalid `signature` in `thinking` block"
	g9 = "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"…"
)

func TestValidateReasoning(t *testing.T) {
	t.Parallel()
	changed := strings.Replace(signed(sonnetID, "Hi", "I will call get_weather."), "call", "ring", 1)
	sig := signThinking(sonnetID, tagOf("Hi"), "I will call get_weather.")
	forged := sig[:10] + map[bool]string{true: "B", false: "A"}[sig[10] == 'A'] + sig[11:]
	data := redactedData(sonnetID, tagOf("Hi"), "hidden")
	data[20] ^= 1
	for _, tc := range []struct {
		name, model, body string
		stream            bool
		want              string
	}{
		// Accepted.
		{"budget", sonnet4, reqWith(join(fields(thinkOn), max4k), hi), false, ""},
		{"budget with effort-free output_config", sonnet4, reqWith(join(fields(thinkOn, `"output_config":{}`), max4k), hi), false, ""},
		{"adaptive with max on Opus 4.6", opus46, reqWith(fields(adaptive, `"output_config":{"effort":"max"}`), hi), false, ""},
		{"budget still taken on Opus 4.6", opus46, reqWith(join(fields(thinkOn), max4k), hi), false, ""},
		{"adaptive with xhigh on Opus 4.7", opus47, reqWith(fields(adaptive, `"output_config":{"effort":"xhigh"}`), hi), false, ""},
		{"disabled", sonnet4, reqWith(fields(`"thinking":{"type":"disabled"}`, `"top_k":5`), hi), false, ""},
		{"interleaved budget above maxTokens", sonnet4, reqWith(join(fields(`"thinking":{"type":"enabled","budget_tokens":8000}`, `"anthropic_beta":["interleaved-thinking-2025-05-14"]`), max4k), hi), false, ""},
		{"temperature 1 with thinking", sonnet4, reqWith(join(fields(thinkOn), `"inferenceConfig":{"maxTokens":4096,"temperature":1}`), hi), false, ""},
		{"maxTokens above 21333 on a stream", sonnet4, reqWith(join(fields(thinkOn), `"inferenceConfig":{"maxTokens":30000}`), hi), true, ""},
		{"signed tool turn", sonnet4, toolTurn(signed(sonnetID, "Hi", "I will call get_weather.")), false, ""},
		{"signed and redacted tool turn", sonnet4, toolTurn(signed(sonnetID, "Hi", "x"), redacted(sonnetID, "Hi")), false, ""},
		{"redacted first", sonnet4, toolTurn(redacted(sonnetID, "Hi")), false, ""},
		{"empty text signed on Opus 4.7", opus47, reqWith(join(weatherTC, fields(adaptive)), hi, assistant(signed(opus47ID, "Hi", ""), useA), user(resultA)), false, ""},
		{"earlier turns may drop their blocks", sonnet4, reqWith(join(weatherTC, fields(thinkOn), max4k), hi, callA, user(resultA), hello, user(`{"text":"again"}`)), false, ""},
		{"thinking off ignores blocks", sonnet4, reqWith(weatherTC, hi, assistant(thinkingBlock("made up", ""), useA), user(resultA)), false, ""},
		{"blocks ignored off Claude", nova, reqWith(weatherTC, hi, assistant(thinkingBlock("[REDACTED]", ""), useA), user(resultA)), false, ""},
		{"Nova 2", nova2, reqWith(fields(`"reasoningConfig":{"type":"enabled","maxReasoningEffort":"high"}`), hi), false, ""},
		{"gpt-oss", gptOSS, reqWith(fields(`"reasoning_effort":"low"`), hi), false, ""},
		{"DeepSeek", deepseek, reqWith(fields(`"reasoning_config":"medium"`), hi), false, ""},
		{"DeepSeek passes reasoning_effort", deepseek, reqWith(fields(`"reasoning_effort":"high"`), hi), false, ""},
		{"Llama passes fields unread", llama, reqWith(fields(thinkOn, `"reasoning_effort":"x"`), hi), false, ""},
		{"opaque profile takes any field", appARN, reqWith(fields(`"reasoning_effort":"x"`, adaptive), hi), false, ""},

		// G1
		{"G1 budget below 1024", sonnet4, reqWith(join(fields(`"thinking":{"type":"enabled","budget_tokens":1000}`), max4k), hi), false, "The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"},
		{"G1 budget missing", sonnet4, reqWith(join(fields(`"thinking":{"type":"enabled"}`), max4k), hi), false, "The model returned the following errors: thinking.enabled.budget_tokens: Field required"},
		{"G1 budget not an integer", sonnet4, reqWith(join(fields(`"thinking":{"type":"enabled","budget_tokens":"2048"}`), max4k), hi), false, "The model returned the following errors: thinking.enabled.budget_tokens: Input should be a valid integer"},
		{"G1 budget a fraction", sonnet4, reqWith(join(fields(`"thinking":{"type":"enabled","budget_tokens":2048.5}`), max4k), hi), false, "The model returned the following errors: thinking.enabled.budget_tokens: Input should be a valid integer"},
		{"thinking not an object", sonnet4, reqWith(fields(`"thinking":true`), hi), false, "The model returned the following errors: thinking: Input should be a valid dictionary or object to extract fields from"},
		{"thinking without type", sonnet4, reqWith(fields(`"thinking":{"budget_tokens":2048}`), hi), false, "The model returned the following errors: thinking.type: Field required"},
		{"thinking of an unknown type", sonnet4, reqWith(fields(`"thinking":{"type":"on"}`), hi), false, "The model returned the following errors: thinking: Input tag 'on' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'"},
		{"budget with adaptive", opus46, reqWith(fields(`"thinking":{"type":"adaptive","budget_tokens":2048}`), hi), false, "The model returned the following errors: thinking.adaptive.budget_tokens: Extra inputs are not permitted"},
		{"G12 budget not below maxTokens", sonnet4, reqWith(join(fields(thinkOn), `"inferenceConfig":{"maxTokens":2048}`), hi), false, "The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"},
		{"G12 budget without maxTokens", sonnet4, reqWith(fields(thinkOn), hi), false, "The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"},
		// G2, G3
		{"G2 max on Sonnet 4.6", sonnet46, reqWith(fields(adaptive, `"output_config":{"effort":"max"}`), hi), false, "The model returned the following errors: output_config.effort: Input should be 'low', 'medium' or 'high'"},
		{"G2 xhigh on Opus 4.6", opus46, reqWith(fields(adaptive, `"output_config":{"effort":"xhigh"}`), hi), false, "The model returned the following errors: output_config.effort: Input should be 'low', 'medium', 'high' or 'max'"},
		{"G2 effort of a budget model", sonnet4, reqWith(fields(`"output_config":{"effort":"high"}`), hi), false, "The model returned the following errors: output_config.effort: Extra inputs are not permitted"},
		{"G2 adaptive on a budget model", sonnet45, reqWith(fields(adaptive), hi), false, `"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" and "thinking.budget_tokens" to control thinking behavior.`},
		{"G3 enabled on Opus 4.7", opus47, reqWith(join(fields(thinkOn), max4k), hi), false, `"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`},
		{"G3 disabled on Opus 4.7", opus47, reqWith(fields(`"thinking":{"type":"disabled"}`), hi), false, `"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`},
		{"thinking on a Claude without reasoning", claude35, reqWith(join(fields(thinkOn), max4k), hi), false, "The model returned the following errors: thinking: Extra inputs are not permitted"},
		// G4
		{"G4 reasoning_effort on Claude", sonnet4, reqWith(fields(`"reasoning_effort":"high"`), hi), false, "The model returned the following errors: reasoning_effort: Extra inputs are not permitted"},
		{"G4 thinking on gpt-oss", gptOSS, reqWith(fields(thinkOn), hi), false, "Failed to deserialize the JSON body into the target type: thinking: unknown field thinking, expected one of messages, model, store, reasoning_effort…"},
		{"G4 reasoning on gpt-oss", gptOSS, reqWith(fields(`"reasoning":{"effort":"high"}`), hi), false, "Failed to deserialize the JSON body into the target type: reasoning: unknown field reasoning, expected one of messages, model, store, reasoning_effort…"},
		{"G4 xhigh on gpt-oss", gptOSS, reqWith(fields(`"reasoning_effort":"xhigh"`), hi), false, "Failed to deserialize the JSON body into the target type: reasoning_effort: unknown variant `xhigh`, expected one of `low`, `medium`, `high`"},
		{"G4 reasoningConfig on Nova Pro", nova, reqWith(fields(`"reasoningConfig":{"type":"enabled"}`), hi), false, "This model doesn't support the additionalModelRequestFields.reasoningConfig field. Remove additionalModelRequestFields.reasoningConfig and try again"},
		{"G4 thinking on Nova 2", nova2, reqWith(fields(thinkOn), hi), false, "This model doesn't support the additionalModelRequestFields.thinking field. Remove additionalModelRequestFields.thinking and try again"},
		{"G4 max on Nova 2", nova2, reqWith(fields(`"reasoningConfig":{"type":"enabled","maxReasoningEffort":"max"}`), hi), false, "Malformed input request: #/reasoningConfig/maxReasoningEffort: max is not a valid enum value, reformat your input and try again."},
		{"G4 Nova 2 without type", nova2, reqWith(fields(`"reasoningConfig":{"maxReasoningEffort":"low"}`), hi), false, "Malformed input request: #/reasoningConfig: required key [type] not found, reformat your input and try again."},
		{"G4 Nova 2 extra key", nova2, reqWith(fields(`"reasoningConfig":{"type":"enabled","budget":5}`), hi), false, "Malformed input request: #/reasoningConfig: extraneous key [budget] is not permitted, reformat your input and try again."},
		{"G4 DeepSeek max", deepseek, reqWith(fields(`"reasoning_config":"max"`), hi), false, "The value at additionalModelRequestFields.reasoning_config must be one of the following: low, medium, high."},
		{"G4 DeepSeek object", deepseek, reqWith(fields(`"reasoning_config":{"effort":"low"}`), hi), false, "The value at additionalModelRequestFields.reasoning_config must be one of the following: low, medium, high."},
		{"G4 thinking on DeepSeek", deepseek, reqWith(fields(thinkOn), hi), false, "This model doesn't support the additionalModelRequestFields.thinking field. Remove additionalModelRequestFields.thinking and try again"},
		// G10
		{"G10 toolChoice any", sonnet4, reqWith(join(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"any":{}}}`, fields(thinkOn), max4k), hi), false, "The model returned the following errors: Thinking may not be enabled when tool_choice forces tool use."},
		{"G10 Anthropic tool_choice tool", opus46, reqWith(join(weatherTC, fields(adaptive, `"tool_choice":{"type":"tool","name":"get_weather"}`)), hi), false, "The model returned the following errors: Thinking may not be enabled when tool_choice forces tool use."},
		// G11
		{"G11 temperature", sonnet4, reqWith(join(fields(thinkOn), `"inferenceConfig":{"maxTokens":4096,"temperature":0.5}`), hi), false, "`temperature` may only be set to 1 when thinking is enabled."},
		{"G11 temperature in adaptive mode", opus46, reqWith(join(fields(adaptive), `"inferenceConfig":{"temperature":0}`), hi), false, "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode."},
		{"G11 topP", sonnet4, reqWith(join(fields(thinkOn), `"inferenceConfig":{"maxTokens":4096,"topP":0.9}`), hi), false, "`top_p` may not be set when thinking is enabled."},
		{"G11 top_k", sonnet4, reqWith(join(fields(thinkOn, `"top_k":40`), max4k), hi), false, "`top_k` may not be set when thinking is enabled."},
		{"G11 temperature on Opus 4.7", opus47, reqWith(`"inferenceConfig":{"temperature":1}`, hi), false, "`temperature` may not be set for this model."},
		{"G11 topP on Opus 4.7", opus47, reqWith(`"inferenceConfig":{"topP":0.5}`, hi), false, "`top_p` may not be set for this model."},
		{"G11 top_k on Opus 4.7", opus47, reqWith(fields(`"top_k":5`), hi), false, "`top_k` may not be set for this model."},
		// G12
		{"G12 prefill", sonnet4, reqWith(join(fields(thinkOn), max4k), hi, hello), false, "The model returned the following errors: Assistant message prefill is not supported when thinking is enabled. The conversation must end with a user message."},
		{"A7 prefill on Opus 4.6 first", opus46, reqWith(fields(adaptive), hi, hello), false, "This model does not support assistant message prefill. The conversation must end with a user message."},
		{"G12 maxTokens above 21333 unary", sonnet4, reqWith(join(fields(thinkOn), `"inferenceConfig":{"maxTokens":21334}`), hi), false, "The model returned the following errors: maxTokens above 21333 requires streaming when thinking is enabled. Use ConverseStream, or lower maxTokens."},
		// G7
		{"G7 tool turn without its block", sonnet4, toolTurn(), false, strings.Replace(g7, "%s", "tool_use", 1)},
		{"G7 text first", sonnet4, reqWith(join(weatherTC, fields(thinkOn), max4k), hi, callAB, user(resultA, resultB)), false, strings.Replace(g7, "%s", "text", 1)},
		{"G7 in adaptive mode", opus46, reqWith(join(weatherTC, fields(adaptive)), hi, callA, user(resultA)), false, strings.Replace(g7, "%s", "tool_use", 1)},
		// G8
		{"G8 empty signature", sonnet4, toolTurn(thinkingBlock("I will call get_weather.", "")), false, "The model returned the following errors: messages.1.content.0.thinking.signature: Field required"},
		{"G8 missing signature", sonnet4, toolTurn(`{"reasoningContent":{"reasoningText":{"text":"x"}}}`), false, "The model returned the following errors: messages.1.content.0.thinking.signature: Field required"},
		{"G8 changed text", sonnet4, toolTurn(changed), false, g8},
		{"G8 changed signature", sonnet4, toolTurn(thinkingBlock("I will call get_weather.", forged)), false, g8},
		{"G8 signature not base64", sonnet4, toolTurn(thinkingBlock("I will call get_weather.", "EqQBCkgIBRAB")), false, g8},
		{"G8 changed redacted block", sonnet4, toolTurn(signed(sonnetID, "Hi", "x"), redactedBlock(data)), false, "messages.1.content.1: thinking or redacted_thinking blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."},
		{"G8 in an earlier turn", sonnet4, reqWith(join(weatherTC, fields(thinkOn), max4k), hi, assistant(changed, useA), user(resultA), hello, user(`{"text":"again"}`)), false, g8},
		// G9
		{"G9 block of another model", sonnet4, toolTurn(signed(opus45ID, "Hi", "I will call get_weather.")), false, g9},
		{"G9 block of another conversation", sonnet4, toolTurn(signed(sonnetID, "Hello", "I will call get_weather.")), false, g9},
		{"G9 redacted block of another model", opus46, reqWith(join(weatherTC, fields(adaptive)), hi, assistant(redacted(sonnetID, "Hi"), useA), user(resultA)), false, g9},
		// Shapes.
		{"reasoning in a user turn", sonnet4, req(user(`{"text":"x"}`, signed(sonnetID, "x", "y"))), false, "messages.0.content.1: reasoningContent blocks can only be in assistant messages."},
		{"reasoning with both members", sonnet4, req(hi, assistant(`{"reasoningContent":{"reasoningText":{"text":"a","signature":"b"},"redactedContent":"AA=="}}`, `{"text":"x"}`)), false, "Malformed input request: #/messages/1/content/0/reasoningContent: expected maxProperties: 1, actual: 2, reformat your input and try again."},
		{"reasoning text without text", sonnet4, req(hi, assistant(`{"reasoningContent":{"reasoningText":{"signature":"b"}}}`)), false, "Malformed input request: #/messages/1/content/0/reasoningContent/reasoningText: required key [text] not found, reformat your input and try again."},
		{"reasoning text with an extra key", sonnet4, req(hi, assistant(`{"reasoningContent":{"reasoningText":{"text":"a","type":"thinking"}}}`)), false, "Malformed input request: #/messages/1/content/0/reasoningContent/reasoningText: extraneous key [type] is not permitted, reformat your input and try again."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, refusal(t, tc.model, tc.body, tc.stream))
		})
	}
}

func TestValidateCachePoints(t *testing.T) {
	t.Parallel()
	ttl := func(v string) string { return `{"cachePoint":{"type":"default","ttl":"` + v + `"}}` }
	sys := func(blocks ...string) string { return `"system":[` + strings.Join(blocks, ",") + `]` }
	for _, tc := range []struct {
		name, model, body, want string
	}{
		// Accepted.
		{"1h after 1h", sonnet45, reqWith(join(sys(`{"text":"s"}`, ttl("1h")), tools(weather, ttl("1h"))), user(`{"text":"a"}`, ttl("1h"))), ""},
		{"5m after 1h", sonnet45, reqWith(sys(`{"text":"s"}`, ttl("1h")), user(`{"text":"a"}`, ttl("5m"))), ""},
		{"after a PDF", sonnet4, req(user(doc("pdf", "a"), cachePt, `{"text":"x"}`)), ""},
		{"after a tool result", sonnet4, reqWith(weatherTC, hi, callA, user(resultA, cachePt)), ""},
		{"after reasoning and text", sonnet4, req(hi, assistant(signed(sonnetID, "Hi", "x"), `{"text":"y"}`, cachePt), hi), ""},
		{"two points in a row", sonnet4, req(user(`{"text":"x"}`, cachePt, cachePt)), ""},
		{"system point on Nova", nova, reqWith(sys(`{"text":"s"}`, cachePt), hi), ""},
		// H1
		{"H1 point inside a tool result", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"x"},`+cachePt+`]}}`)), "Malformed input request: #/messages/2/content/0/toolResult/content/1: extraneous key [cachePoint] is not permitted, reformat your input and try again."},
		{"H1 point without type", sonnet4, req(user(`{"text":"x"}`, `{"cachePoint":{"ttl":"5m"}}`)), "Malformed input request: #/messages/0/content/1/cachePoint: required key [type] not found, reformat your input and try again."},
		{"H1 point with an extra key", sonnet4, reqWith(sys(`{"text":"s"}`, `{"cachePoint":{"type":"default","scope":"global"}}`), hi), "Malformed input request: #/system/1/cachePoint: extraneous key [scope] is not permitted, reformat your input and try again."},
		{"H1 point of another type", sonnet4, req(user(`{"text":"x"}`, `{"cachePoint":{"type":"ephemeral"}}`)), "1 validation error detected: Value at 'messages.1.member.content.2.member.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]"},
		{"H1 unknown ttl", sonnet45, reqWith(tools(weather, ttl("2h")), hi), "1 validation error detected: Value '2h' at 'toolConfig.tools.2.member.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]"},
		{"H1 unknown ttl in system", sonnet45, reqWith(sys(`{"text":"s"}`, ttl("1d")), hi), "1 validation error detected: Value at 'system.2.member.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]"},
		// H3
		{"H3 1h after 5m in messages", sonnet45, reqWith(sys(`{"text":"s"}`, cachePt), hi, hello, user(`{"text":"a"}`, `{"text":"b"}`, ttl("1h"))), "messages.2.content.1.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."},
		{"H3 1h in system after 5m in tools", opus46, reqWith(join(sys(`{"text":"s"}`, ttl("1h")), tools(weather, ttl("5m"))), hi), "system.0.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."},
		{"H3 index skips points", sonnet45, reqWith(tools(weather, cachePt, spec("b"), ttl("1h")), hi), "tools.1.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."},
		// H4
		{"H4 after reasoning", sonnet4, req(hi, assistant(signed(sonnetID, "Hi", "x"), cachePt, `{"text":"y"}`), hi), "Cache point cannot be inserted after reasoning block. Please remove the invalid cache point and try again."},
		{"H4 first in a message", sonnet4, req(hi, hello, user(cachePt, `{"text":"x"}`)), "There is nothing available to cache. Please remove the invalid cache point and try again."},
		{"H4 first in system", sonnet4, reqWith(sys(cachePt, `{"text":"s"}`), hi), "There is nothing available to cache. Please remove the invalid cache point and try again."},
		{"H4 first in tools", sonnet4, reqWith(tools(cachePt, weather), hi), "There is nothing available to cache. Please remove the invalid cache point and try again."},
		{"H4 after a text document", sonnet4, req(user(doc("txt", "a"), cachePt, `{"text":"x"}`)), "There is nothing available to cache. Please remove the invalid cache point and try again."},
		// H5
		{"H5 1h on Sonnet 4", sonnet4, req(user(`{"text":"x"}`, ttl("1h"))), "This model doesn't support the value 1h of messages.0.content.1.cachePoint.ttl. Remove the ttl, or set it to 5m, and try again"},
		{"H5 no caching", claude35, reqWith(sys(`{"text":"s"}`, cachePt), hi), "This model doesn't support the system.1.cachePoint field. Remove system.1.cachePoint and try again"},
		{"H5 no caching on Opus 4.7", opus47, req(user(`{"text":"x"}`, cachePt)), "This model doesn't support the messages.0.content.1.cachePoint field. Remove messages.0.content.1.cachePoint and try again"},
		{"H8 point on Nova tools", nova, reqWith(tools(weather, cachePt), hi), "This model doesn't support the toolConfig.tools.1.cachePoint field. Remove toolConfig.tools.1.cachePoint and try again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, refusal(t, tc.model, tc.body, false))
		})
	}
}

// TestValidateJSONReasoning: the exported validator, which the gateway's translation tests
// use, applies G too.
func TestValidateJSONReasoning(t *testing.T) {
	t.Parallel()
	err := ValidateJSON(sonnet4, []byte(toolTurn()))
	var apiErr *apiError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, strings.Replace(g7, "%s", "tool_use", 1), apiErr.Message)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
