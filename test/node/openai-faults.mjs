// The openai npm client against a gateway whose simulator injects faults. The Go test
// configures them in this order; each applies once, to the first request it fits:
//   stream_exception,exception=modelStreamErrorException,times=1   fails a stream mid-way
//   truncate,times=1                       a stream whose upstream body just ends
//   model_not_ready,times=1,mode=stream    a 429 with Retry-After before a stream starts
//   model_not_ready,times=1,mode=unary     the same for a unary call
// so the checks below run in the order that meets each fault where it is expected.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { apiKey, baseURL, check } from './lib.mjs';

// Counts the HTTP requests the SDK makes; the SDK is otherwise as users configure it.
let requests = 0;
const client = new OpenAI({
  baseURL,
  apiKey,
  fetch: (url, init) => {
    requests++;
    return fetch(url, init);
  },
});
const model = process.env.GATEWAY_MODEL || 'us.anthropic.claude-sonnet-4-20250514-v1:0';
const messages = [{ role: 'user', content: 'Tell me about network policies.' }];

await check('429 with Retry-After: the SDK waits and retries, the call succeeds', async () => {
  requests = 0;
  const begin = performance.now();
  const { data, response } = await client.chat.completions.create({ model, messages }).withResponse();
  const waited = performance.now() - begin;
  assert.equal(response.status, 200);
  assert.equal(requests, 2, 'one 429, then the retry');
  assert.equal(data.choices[0].finish_reason, 'stop');
  // The SDK's own backoff starts at 0.5 s less jitter; Retry-After: 1 makes it a second.
  assert.ok(waited >= 950, `retried after ${Math.round(waited)} ms: Retry-After was not honoured`);
});

await check('mid-stream failure: iterating the stream throws the error event', async () => {
  requests = 0;
  const stream = await client.chat.completions.create({
    model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usages = 0;
  await assert.rejects(
    (async () => {
      for await (const chunk of stream) {
        if (chunk.usage) usages++;
        text += chunk.choices[0]?.delta.content ?? '';
      }
    })(),
    (err) => {
      assert.ok(err instanceof OpenAI.APIError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.type, 'server_error');
      assert.equal(err.code, 'upstream_error');
      assert.ok(err.message.length > 0);
      return true;
    },
  );
  assert.ok(text.length > 0, 'some text arrived before the failure');
  assert.equal(usages, 0, 'no usage on a failed stream');
  assert.equal(requests, 1, 'a stream that failed mid-way is not retried');
});

await check('truncated upstream stream: the stream helper rejects', async () => {
  const stream = client.chat.completions.stream({ model, messages });
  await assert.rejects(stream.finalChatCompletion(), (err) => {
    assert.ok(err instanceof OpenAI.APIError, `got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.code, 'upstream_error');
    return true;
  });
});

await check('429 before a stream starts: retried too', async () => {
  requests = 0;
  const stream = await client.chat.completions.create({ model, messages, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  assert.equal(requests, 2, 'one 429, then the retry');
  assert.ok(text.length > 0);
});

await check('after the faults: a stream completes', async () => {
  const final = await client.chat.completions.stream({ model, messages }).finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, 'stop');
});
