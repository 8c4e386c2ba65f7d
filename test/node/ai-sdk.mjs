// The Vercel AI SDK (ai, with its OpenAI-compatible provider) against the gateway:
// generateText and streamText with a tool the SDK executes itself, in a multi-step loop.
import assert from 'node:assert/strict';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { apiKey, baseURL, check } from './lib.mjs';

const gateway = createOpenAICompatible({ name: 'llm-gateway', baseURL, apiKey, includeUsage: true });
const model = gateway(process.env.GATEWAY_MODEL || 'us.anthropic.claude-sonnet-4-20250514-v1:0');

// A fresh tool per run, recording what it was called with.
function weather() {
  const calls = [];
  const getWeather = tool({
    description: 'The current weather in a city',
    inputSchema: z.object({
      city: z.string(),
      unit: z.enum(['celsius', 'fahrenheit']),
      days: z.number().int(),
    }),
    execute: async (input) => {
      calls.push(input);
      return { city: input.city, temperature: 21, sky: 'clear' };
    },
  });
  return { calls, tools: { get_weather: getWeather } };
}

const prompt = 'What is the weather in Paris? Use get_weather.';
// The simulator quotes each result as "<tool> → <result JSON>".
const quoted = /get_weather → \{"city":"example","temperature":21,"sky":"clear"\}/;
const schemaShaped = { city: 'example', unit: 'celsius', days: 42 };

await check('generateText: tool executed with schema-shaped args, final text quotes the result', async () => {
  const { calls, tools } = weather();
  const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt });
  assert.deepEqual(calls, [schemaShaped]);
  assert.equal(result.steps.length, 2, 'a tool step, then the answer');
  assert.equal(result.steps[0].finishReason, 'tool-calls');
  assert.equal(result.steps[0].toolCalls.length, 1);
  assert.equal(result.steps[0].toolCalls[0].toolName, 'get_weather');
  assert.equal(result.finishReason, 'stop');
  assert.match(result.text, quoted);
  assert.ok(result.totalUsage.inputTokens > 0 && result.totalUsage.outputTokens > 0, JSON.stringify(result.totalUsage));
  assert.equal(result.totalUsage.totalTokens, result.totalUsage.inputTokens + result.totalUsage.outputTokens);
});

await check('streamText: the full stream, tool executed, usage and final text', async () => {
  const { calls, tools } = weather();
  const result = streamText({
    model,
    tools,
    stopWhen: stepCountIs(5),
    prompt,
    onError: ({ error }) => {
      throw error;
    },
  });
  const seen = new Map();
  let text = '';
  const finishes = [];
  for await (const part of result.fullStream) {
    seen.set(part.type, (seen.get(part.type) ?? 0) + 1);
    switch (part.type) {
      case 'error':
        throw part.error;
      case 'text-delta':
        text += part.text;
        break;
      case 'tool-call':
        assert.equal(part.toolName, 'get_weather');
        assert.deepEqual(part.input, schemaShaped);
        break;
      case 'tool-result':
        assert.deepEqual(part.output, { city: 'example', temperature: 21, sky: 'clear' });
        break;
      case 'finish-step':
        finishes.push(part);
        break;
    }
  }
  assert.deepEqual(calls, [schemaShaped]);
  assert.ok(seen.get('text-delta') > 2, `the text came in one piece: ${JSON.stringify([...seen])}`);
  assert.equal(seen.get('tool-call'), 1);
  assert.equal(seen.get('tool-result'), 1);
  assert.deepEqual(finishes.map((f) => f.finishReason), ['tool-calls', 'stop']);
  for (const f of finishes) {
    assert.ok(f.usage.inputTokens > 0 && f.usage.outputTokens > 0, `a step without usage: ${JSON.stringify(f.usage)}`);
  }
  const finalText = await result.text; // the last step's text
  assert.match(finalText, quoted);
  assert.ok(text.endsWith(finalText), 'the streamed deltas end with the final text');
  assert.equal(await result.finishReason, 'stop');
  const usage = await result.totalUsage;
  assert.equal(usage.inputTokens, finishes[0].usage.inputTokens + finishes[1].usage.inputTokens);
  assert.equal(usage.totalTokens, usage.inputTokens + usage.outputTokens);
});

await check('streamText: two tools named, called in parallel, both results quoted', async () => {
  const { calls, tools } = weather();
  const zones = [];
  tools.get_time = tool({
    description: 'The local time in a time zone',
    inputSchema: z.object({ zone: z.string() }),
    execute: async ({ zone }) => {
      zones.push(zone);
      return '14:05';
    },
  });
  const result = streamText({
    model,
    tools,
    stopWhen: stepCountIs(5),
    prompt: 'Use get_weather and get_time for Lisbon.',
    onError: ({ error }) => {
      throw error;
    },
  });
  await result.consumeStream();
  const steps = await result.steps;
  assert.equal(steps.length, 2);
  assert.deepEqual(steps[0].toolCalls.map((c) => c.toolName), ['get_weather', 'get_time']);
  assert.notEqual(steps[0].toolCalls[0].toolCallId, steps[0].toolCalls[1].toolCallId);
  assert.deepEqual(calls, [schemaShaped]);
  assert.deepEqual(zones, ['example']);
  const text = await result.text;
  assert.match(text, quoted);
  assert.match(text, /get_time → 14:05/);
});
