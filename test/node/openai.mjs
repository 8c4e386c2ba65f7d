// The official openai npm client against the gateway, as its users call it: models, unary
// and streamed chat (chunks and the stream helper), a tool loop that sends back the
// assistant message exactly as the SDK returned it, parallel tool calls, and the error
// classes the SDK maps statuses to.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { apiKey, baseURL, check, timeTool, weatherTool } from './lib.mjs';

const client = new OpenAI({ baseURL, apiKey });
let model;

await check('models.list names the default model', async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, 'model');
    ids.push(m.id);
  }
  assert.ok(ids.length > 0, 'no models listed');
  if (process.env.GATEWAY_MODEL) assert.ok(ids.includes(process.env.GATEWAY_MODEL), `${process.env.GATEWAY_MODEL} not in ${ids}`);
  model = ids.at(-1); // the default model comes last (PROTOCOL.md 10.4)
  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);
});

const prompt = [{ role: 'user', content: 'Say something about admission policies.' }];
let unaryText;

await check('unary chat', async () => {
  const res = await client.chat.completions.create({ model, messages: prompt });
  assert.equal(res.object, 'chat.completion');
  assert.match(res.id, /^chatcmpl-/);
  assert.equal(res.model, model);
  assert.equal(res.choices.length, 1);
  const [choice] = res.choices;
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(choice.message.content.length > 0, 'empty answer');
  assert.equal(choice.message.tool_calls, undefined);
  assert.ok(res.usage.total_tokens > 0);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + res.usage.completion_tokens);
  unaryText = choice.message.content;
});

await check('streaming: iterating chunks, usage once, same text as unary', async () => {
  const stream = await client.chat.completions.create({
    model,
    messages: prompt,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usages = 0;
  let usage;
  let finish;
  let chunks = 0;
  let id;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    id ??= chunk.id;
    assert.equal(chunk.id, id, 'every chunk has the same id');
    if (chunk.usage) {
      usages++;
      usage = chunk.usage;
      assert.deepEqual(chunk.choices, [], 'the usage chunk has no choices');
    }
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks > 3, `only ${chunks} chunks: the answer was not streamed in deltas`);
  assert.equal(usages, 1, 'usage must appear exactly once');
  assert.ok(usage.total_tokens > 0);
  assert.equal(finish, 'stop');
  assert.equal(text, unaryText);
});

await check('streaming: the stream helper and finalChatCompletion', async () => {
  const stream = client.chat.completions.stream({
    model,
    messages: prompt,
    stream_options: { include_usage: true },
  });
  let deltas = '';
  stream.on('content', (delta) => {
    deltas += delta;
  });
  let usages = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usages++;
  }
  const final = await stream.finalChatCompletion();
  assert.equal(usages, 1, 'usage must appear exactly once');
  assert.ok(final.usage && final.usage.total_tokens > 0, 'finalChatCompletion carries the usage');
  assert.equal(final.choices.length, 1);
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.choices[0].message.content, unaryText);
  assert.equal(deltas, unaryText);
});

await check('tool loop: user → tool_calls → tool result with the SDK message sent back → text', async () => {
  const messages = [
    { role: 'system', content: 'You are a weather assistant.' },
    { role: 'user', content: 'What is the weather in Paris? Use get_weather.' },
  ];
  const first = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls?.length, 1, JSON.stringify(choice.message));
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.ok(call.id, 'the call has an id');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'example', unit: 'celsius' });

  messages.push(choice.message); // unmodified: refusal: null and all
  messages.push({ role: 'tool', tool_call_id: call.id, content: '{"temperature":21,"sky":"clear"}' });
  const second = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.match(second.choices[0].message.content, /get_weather → \{"temperature":21,"sky":"clear"\}/);
});

await check('tool loop, streamed: finalChatCompletion message sent back unmodified', async () => {
  const messages = [{ role: 'user', content: 'Use get_weather for Oslo.' }];
  const stream = client.chat.completions.stream({ model, messages, tools: [weatherTool] });
  const first = await stream.finalChatCompletion();
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls?.length, 1, JSON.stringify(choice.message));
  const call = choice.message.tool_calls[0];
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'example', unit: 'celsius' });

  messages.push(choice.message); // as the helper built it: parsed: null, parsed_arguments, …
  messages.push({ role: 'tool', tool_call_id: call.id, content: 'rain, 9 °C' });
  const second = await client.chat.completions.stream({ model, messages, tools: [weatherTool] }).finalChatCompletion();
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.match(second.choices[0].message.content, /get_weather → rain, 9 °C/);
});

await check('parallel tool calls: two calls, distinct ids and indexes, two tool messages', async () => {
  const messages = [{ role: 'user', content: 'Use get_weather and get_time for Lisbon.' }];
  const tools = [weatherTool, timeTool];

  // Streamed, to see the indexes the chunks carry.
  const stream = await client.chat.completions.create({ model, messages, tools, stream: true });
  const byIndex = new Map();
  for await (const chunk of stream) {
    for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
      if (!byIndex.has(tc.index)) byIndex.set(tc.index, { id: tc.id, name: tc.function?.name, args: '' });
      else assert.equal(tc.id, undefined, 'the id is sent once');
      byIndex.get(tc.index).args += tc.function?.arguments ?? '';
    }
  }
  assert.deepEqual([...byIndex.keys()], [0, 1]);
  const streamed = [...byIndex.values()];
  assert.deepEqual(streamed.map((c) => c.name), ['get_weather', 'get_time']);
  assert.notEqual(streamed[0].id, streamed[1].id);

  // Unary, and the loop closed with one tool message per call.
  const res = await client.chat.completions.create({ model, messages, tools });
  const choice = res.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  const calls = choice.message.tool_calls;
  assert.equal(calls.length, 2, JSON.stringify(choice.message));
  assert.notEqual(calls[0].id, calls[1].id);
  assert.deepEqual(calls.map((c) => c.function.name), ['get_weather', 'get_time']);
  assert.deepEqual(calls.map((c) => JSON.parse(c.function.arguments)), streamed.map((c) => JSON.parse(c.args)));
  assert.deepEqual(JSON.parse(calls[1].function.arguments), { zone: 'example', hour24: true });

  messages.push(choice.message);
  messages.push({ role: 'tool', tool_call_id: calls[0].id, content: 'sunny' });
  messages.push({ role: 'tool', tool_call_id: calls[1].id, content: '14:05' });
  const final = await client.chat.completions.create({ model, messages, tools });
  const text = final.choices[0].message.content;
  assert.match(text, /get_weather → sunny/);
  assert.match(text, /get_time → 14:05/);
});

await check('runTools: the SDK runs the tool loop itself, streamed', async () => {
  const seen = [];
  const runner = client.chat.completions.runTools({
    model,
    stream: true,
    messages: [{ role: 'user', content: 'What is the weather in Rome? Use get_weather.' }],
    tools: [
      {
        type: 'function',
        function: {
          ...weatherTool.function,
          parse: JSON.parse,
          function: (args) => {
            seen.push(args);
            return `cloudy in ${args.city}`;
          },
        },
      },
    ],
  });
  const text = await runner.finalContent();
  assert.deepEqual(seen, [{ city: 'example', unit: 'celsius' }]);
  assert.match(text, /get_weather → cloudy in example/);
});

await check('401 → AuthenticationError', async () => {
  const bad = new OpenAI({ baseURL, apiKey: 'not-a-key', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model, messages: prompt }), (err) => {
    assert.ok(err instanceof OpenAI.AuthenticationError, `got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_api_key');
    assert.equal(err.type, 'authentication_error');
    assert.ok(err.requestID, 'x-request-id is read as requestID');
    return true;
  });
});

await check('400 n: 2 → BadRequestError, param n, code unsupported_parameter', async () => {
  await assert.rejects(client.chat.completions.create({ model, messages: prompt, n: 2 }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.param, 'n');
    assert.equal(err.code, 'unsupported_parameter');
    assert.equal(err.type, 'invalid_request_error');
    return true;
  });
});

await check('404 unknown model → NotFoundError (chat and models.retrieve)', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: prompt }), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, `got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 404);
    assert.equal(err.code, 'model_not_found');
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: prompt, stream: true }), OpenAI.NotFoundError);
  await assert.rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError);
});
