/** The Node host hands the core the headers Node parsed (IncomingMessage.headers), not a Headers object. */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRequests, type Running, startStack } from '../support/harness.ts';

const BODY = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 2,
});

/** Posts with headers given as raw name/value pairs (a name may repeat; Node adds no Host then). */
function post(url: string, pairs: string[]): Promise<number> {
  const headers = ['host', new URL(url).host, ...pairs];
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/chat/completions`, { method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

describe('Node request headers', () => {
  let stack: Running;
  beforeAll(async () => {
    stack = await startStack({ engines: 1 });
  });
  afterAll(() => stack.stop());

  it("forwards Node's reading of the headers: a repeated User-Agent keeps its first value", async () => {
    const status = await post(stack.router.url, [
      'content-type',
      'application/json',
      'user-agent',
      'first',
      'user-agent',
      'second',
      'x-request-id',
      'node-raw-1',
      'x-tag',
      'a',
      'x-tag',
      'b',
    ]);
    expect(status).toBe(200);
    const seen = engineRequests(stack.engines).find((e) => e.headers['x-request-id'] === 'node-raw-1');
    // A Headers object would join both User-Agent values ("first, second").
    expect(seen?.headers['user-agent']).toBe('first');
    expect(seen?.headers['x-tag']).toBe('a, b');
  });
});
