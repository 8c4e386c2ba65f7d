// The official Anthropic SDK (@anthropic-ai/sdk) against the gateway's Messages API, as its
// users call it: unary and streamed messages (the raw events and the stream helper), an
// Anthropic model name, the models list, count_tokens, a tool loop that sends back the assistant's content exactly as the SDK
// returned it (unary, then streamed with thinking on, its signed blocks replayed), and the
// error classes the SDK maps statuses to.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { apiKey, baseURL, check, env } from './lib.mjs';

// The SDK's base URL is the server's root: it appends /v1/messages itself.
const client = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey, maxRetries: 0 });
const model = env('GATEWAY_MODEL');

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city', 'unit'],
  },
};

const prompt = [{ role: 'user', content: 'Say something about admission policies.' }];
let unaryText;

await check('unary message', async () => {
  const msg = await client.messages.create({ model, max_tokens: 1024, messages: prompt });
  assert.equal(msg.type, 'message');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.model, model, 'the model as the client named it');
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].type, 'text');
  assert.ok(msg.content[0].text.length > 0, 'empty answer');
  assert.ok(msg.usage.input_tokens > 0, 'input_tokens');
  assert.ok(msg.usage.output_tokens > 0, 'output_tokens');
  unaryText = msg.content[0].text;
});

await check('streaming: the raw events in order, the same text as unary', async () => {
  const stream = await client.messages.create({ model, max_tokens: 1024, messages: prompt, stream: true });
  const types = [];
  let text = '';
  let stop;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta') {
      assert.equal(ev.delta.type, 'text_delta');
      text += ev.delta.text;
    }
    if (ev.type === 'message_delta') {
      stop = ev.delta.stop_reason;
      assert.ok(ev.usage.output_tokens > 0, 'message_delta carries the output tokens');
    }
  }
  const deltas = types.filter((t) => t === 'content_block_delta').length;
  assert.ok(deltas >= 3, `only ${deltas} deltas: the answer was not streamed`);
  const kinds = types.filter((t) => t !== 'content_block_delta' && t !== 'ping');
  assert.deepEqual(kinds, ['message_start', 'content_block_start', 'content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(stop, 'end_turn');
  assert.equal(text, unaryText);
});

await check('streaming: the stream helper and finalMessage', async () => {
  const stream = client.messages.stream({ model, max_tokens: 1024, messages: prompt });
  let text = '';
  stream.on('text', (delta) => {
    text += delta;
  });
  const msg = await stream.finalMessage();
  assert.equal(text, unaryText);
  assert.equal(msg.content[0].text, unaryText);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(msg.usage.output_tokens > 0);
});

await check("an Anthropic model name: resolved by the gateway, answered as sent", async () => {
  const msg = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: prompt });
  assert.equal(msg.model, 'claude-sonnet-4-5');
  assert.equal(msg.stop_reason, 'end_turn');
});

await check("models.list in Anthropic's shape, the default model among them", async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.type, 'model');
    assert.equal(typeof m.display_name, 'string');
    ids.push(m.id);
  }
  assert.ok(ids.includes(model), `${model} not in ${ids}`);
  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);
});

await check('count_tokens: the messages and tools of a request', async () => {
  const small = await client.messages.countTokens({ model, messages: prompt });
  assert.equal(typeof small.input_tokens, 'number');
  assert.ok(small.input_tokens > 0, `input_tokens ${small.input_tokens}`);
  const withTools = await client.messages.countTokens({ model, messages: prompt, tools: [weatherTool] });
  assert.ok(withTools.input_tokens > small.input_tokens, `a tool adds tokens: ${withTools.input_tokens} <= ${small.input_tokens}`);
});

const task = { role: 'user', content: 'What is the weather in Paris? Use get_weather.' };

// toolResults answers each tool_use block of content.
function toolResults(content) {
  return content
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: JSON.stringify({ temp_c: 21 }) }));
}

await check('tool loop, unary: the tool_use sent back as the SDK returned it', async () => {
  const first = await client.messages.create({ model, max_tokens: 1024, tools: [weatherTool], messages: [task] });
  assert.equal(first.stop_reason, 'tool_use');
  const uses = first.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, 'get_weather');
  assert.match(uses[0].id, /^toolu_|^tooluse_/);
  assert.deepEqual(uses[0].input, { city: 'example', unit: 'celsius' });
  const second = await client.messages.create({
    model,
    max_tokens: 1024,
    tools: [weatherTool],
    messages: [task, { role: 'assistant', content: first.content }, { role: 'user', content: toolResults(first.content) }],
  });
  assert.equal(second.stop_reason, 'end_turn');
  assert.equal(second.content.at(-1).type, 'text');
  assert.match(second.content.at(-1).text, /get_weather → \{"temp_c":21\}/);
});

await check('tool loop, streamed with thinking on: signed thinking blocks replayed unchanged', async () => {
  const params = { model, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [weatherTool] };
  const stream = client.messages.stream({ ...params, messages: [task] });
  let json = '';
  stream.on('inputJson', (delta) => {
    json += delta;
  });
  const first = await stream.finalMessage();
  assert.equal(first.stop_reason, 'tool_use');
  assert.equal(first.content[0].type, 'thinking', `the answer starts with thinking: ${JSON.stringify(first.content)}`);
  assert.ok(first.content[0].signature.length > 0, 'the thinking block is signed');
  const use = first.content.find((b) => b.type === 'tool_use');
  assert.deepEqual(use.input, { city: 'example', unit: 'celsius' });
  assert.deepEqual(JSON.parse(json), use.input, 'the input_json_delta pieces make the input');
  const second = await client.messages
    .stream({
      ...params,
      messages: [task, { role: 'assistant', content: first.content }, { role: 'user', content: toolResults(first.content) }],
    })
    .finalMessage();
  assert.equal(second.stop_reason, 'end_turn');
  assert.equal(second.content[0].type, 'thinking');
  assert.match(second.content.at(-1).text, /get_weather → \{"temp_c":21\}/);
});

await check('errors: the SDK classes and Anthropic error types', async () => {
  await assert.rejects(client.messages.create({ model, max_tokens: 1024, messages: [] }), (err) => {
    assert.ok(err instanceof Anthropic.BadRequestError, `${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.error.type, 'error');
    assert.equal(err.error.error.type, 'invalid_request_error');
    assert.ok(err.requestID, 'a request-id header');
    return true;
  });
  const stranger = new Anthropic({ baseURL: client.baseURL, apiKey: 'not-a-key', maxRetries: 0 });
  await assert.rejects(stranger.messages.create({ model, max_tokens: 1024, messages: prompt }), (err) => {
    assert.ok(err instanceof Anthropic.AuthenticationError, `${err}`);
    assert.equal(err.error.error.type, 'authentication_error');
    return true;
  });
  await assert.rejects(client.messages.create({ model: 'no-such-model', max_tokens: 1024, messages: prompt }), (err) => {
    assert.ok(err instanceof Anthropic.NotFoundError, `${err}`);
    assert.equal(err.error.error.type, 'not_found_error');
    return true;
  });
});
