import { afterEach, describe, expect, it } from 'vitest';
import { type Running, startStack } from '../support/harness.ts';

const stream = JSON.stringify({
  model: 'sim-model',
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
});
const post = (url: string, body = stream) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });

describe('admission control over loopback', () => {
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('holds a permit until the response body ends, queues the next, refuses beyond the queue with 429', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { tokens: 10, itlMs: 20 },
      config: { admission: { maxConcurrentRequests: 1, queueSize: 1 } },
    });
    const first = await post(stack.router.url);
    const queued = post(stack.router.url);
    await expect.poll(() => stack!.engines[0]!.engine.log.length).toBe(1);
    const refused = await post(stack.router.url);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-router-error-code')).toBe('admission_queue_full');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(stack.engines[0]!.engine.log).toHaveLength(1); // nothing reached the engine but the first
    await first.text();
    const second = await queued;
    expect(second.status).toBe(200);
    await second.text();
    expect(stack.engines[0]!.engine.log).toHaveLength(2);
  });
});
