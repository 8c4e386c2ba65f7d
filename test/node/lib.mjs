// Shared by the scripts: where the gateway is, and a runner that names the failing check.
// e2e/node_clients_test.go (agents.mjs: e2e/agents_test.go) starts a gateway on the
// simulator and runs each script with GATEWAY_BASE_URL (http://host:port/v1),
// GATEWAY_API_KEY and GATEWAY_MODEL set.

export function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set; run these scripts through 'go test ./e2e -run TestNodeClients'`);
    process.exit(2);
  }
  return v;
}

export const baseURL = env('GATEWAY_BASE_URL');
export const apiKey = env('GATEWAY_API_KEY');

// check runs one named check; the first failure ends the script non-zero with the check's
// name and the error (an AssertionError shows expected and actual).
export async function check(name, fn) {
  const begin = performance.now();
  try {
    await fn();
  } catch (err) {
    console.error(`FAIL ${name}`);
    console.error(err);
    process.exit(1);
  }
  console.log(`ok   ${name} (${Math.round(performance.now() - begin)} ms)`);
}

// The tools the scripts offer. The simulator calls a tool when the last user turn names
// it, with arguments built from its JSON schema: an enum's first value, "example" for a
// string, 42 for an integer.
export const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'unit'],
    },
  },
};

export const timeTool = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'The local time in a time zone',
    parameters: {
      type: 'object',
      properties: { zone: { type: 'string' }, hour24: { type: 'boolean' } },
      required: ['zone'],
    },
  },
};
