// The OpenAI Agents SDK (@openai/agents) against the gateway's Responses API, as its users
// call it: an agent with function tools (zod parameters, strict schemas), run() unary and
// streamed, each a tool loop the SDK drives itself (the model calls a tool, the SDK runs it
// and sends its output back, the model answers), then a second turn on the first's history.
import assert from 'node:assert/strict';
import {
  Agent,
  OpenAIProvider,
  run,
  setDefaultModelProvider,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import { z } from 'zod';
import { apiKey, baseURL, check, env } from './lib.mjs';

// The SDK's own client (its openai dependency) on the gateway, over HTTP, with the
// Responses API; no trace is exported to OpenAI.
setDefaultModelProvider(new OpenAIProvider({ baseURL, apiKey, useResponses: true }));
setTracingDisabled(true);

// What each tool was called with, in order.
const calls = [];

const weather = tool({
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
  execute: async ({ city, unit }) => {
    calls.push(['get_weather', city, unit]);
    return `It is 21 degrees ${unit} and sunny in ${city}.`;
  },
});

const time = tool({
  name: 'get_time',
  description: 'The local time in a time zone',
  parameters: z.object({ zone: z.string() }),
  execute: async ({ zone }) => {
    calls.push(['get_time', zone]);
    return `It is 09:30 in ${zone}.`;
  },
});

const agent = new Agent({
  name: 'Assistant',
  instructions: 'You answer with the tools you are given.',
  model: env('GATEWAY_MODEL'),
  tools: [weather, time],
});

// The simulator says it will call the tool the user's words name and calls it, with the
// backquoted value as its first required string, then answers "Tool results received:
// <tool> → <output>".
const ask = 'Use get_weather for `Paris`';
const answer = 'Tool results received: get_weather → It is 21 degrees celsius and sunny in Paris.';

// The item types of a run, in order.
const itemTypes = (result) => result.newItems.map((item) => item.type);

let first;

await check('run(): the SDK runs the tool the model calls and the model answers with its output', async () => {
  calls.length = 0;
  const result = await run(agent, ask);
  assert.deepEqual(calls, [['get_weather', 'Paris', 'celsius']]);
  assert.equal(result.finalOutput, answer);
  assert.deepEqual(itemTypes(result), ['message_output_item', 'tool_call_item', 'tool_call_output_item', 'message_output_item']);
  const [, call, output] = result.newItems;
  assert.equal(call.rawItem.type, 'function_call');
  assert.equal(call.rawItem.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.rawItem.arguments), { city: 'Paris', unit: 'celsius' });
  assert.equal(output.rawItem.callId, call.rawItem.callId, 'the output is paired with its call');
  assert.equal(result.rawResponses.length, 2, 'one response for the call, one for the answer');
  for (const r of result.rawResponses) {
    assert.match(r.responseId, /^resp_/);
    assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0, JSON.stringify(r.usage));
    assert.equal(r.usage.totalTokens, r.usage.inputTokens + r.usage.outputTokens);
  }
  assert.equal(result.lastAgent.name, 'Assistant');
  first = result;
});

await check('run() streamed: the events of the same tool loop, the text deltas making the answer', async () => {
  calls.length = 0;
  const result = await run(agent, ask, { stream: true });
  const names = [];
  const raw = new Set();
  let text = '';
  for await (const event of result) {
    if (event.type === 'run_item_stream_event') names.push(event.name);
    if (event.type === 'raw_model_stream_event') {
      raw.add(event.data.type);
      if (event.data.type === 'output_text_delta') text += event.data.delta;
    }
  }
  await result.completed;
  assert.equal(result.error ?? null, null);
  assert.deepEqual(calls, [['get_weather', 'Paris', 'celsius']]);
  assert.deepEqual(names, ['message_output_created', 'tool_called', 'tool_output', 'message_output_created']);
  assert.ok(raw.has('response_started') && raw.has('response_done') && raw.has('output_text_delta'), [...raw].join(', '));
  assert.equal(result.finalOutput, answer);
  const said = result.newItems.filter((item) => item.type === 'message_output_item').map((item) => item.content);
  assert.equal(text, said.join(''), 'the deltas are the text of both messages');
  assert.equal(said.at(-1), answer);
  assert.deepEqual(itemTypes(result), ['message_output_item', 'tool_call_item', 'tool_call_output_item', 'message_output_item']);
});

await check('a second turn on the first run\'s history calls the other tool', async () => {
  calls.length = 0;
  const history = [...first.history, { role: 'user', content: 'Now use get_time for `Europe/Paris`' }];
  const result = await run(agent, history);
  assert.deepEqual(calls, [['get_time', 'Europe/Paris']]);
  assert.equal(result.finalOutput, 'Tool results received: get_time → It is 09:30 in Europe/Paris.');
});
