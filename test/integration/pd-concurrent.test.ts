/**
 * Mooncake concurrent dispatch when the prefill fails: the decode was sent already and would wait
 * for KV that never comes, so the router calls it off and the client gets the prefill's failure.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { legsOf, type PdStack, startPdStack } from '../support/pd-stack.ts';

let stack: PdStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const post = (s: PdStack) =>
  fetch(`${s.router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'x' }] }),
  });

describe('Mooncake concurrent dispatch, failing prefill', () => {
  it.each([
    ['a 503', { mode: 'status' as const, status: 503, body: '{"error":"prefill full"}' }, 503],
    ['a connection reset', { mode: 'reset' as const }, 502],
  ])('%s: the decode is called off; the client gets the failure', async (_name, failure, status) => {
    stack = await startPdStack({
      prefill: () => ({ bootstrapPort: 0, failure }),
      decode: () => ({ kvWaitMs: 3000 }),
      prefillArg: (e) => [e.url, String(e.bootstrap?.port)],
      flags: () => ['--kv-connector', 'mooncake', '--pd-concurrent-dispatch'],
    });
    const res = await post(stack);
    expect(res.status).toBe(status);
    const text = await res.text();
    if (status === 503) expect(text).toBe('{"error":"prefill full"}');
    const { decode } = legsOf(stack, res.headers.get('x-request-id') as string);
    for (const d of decode) await d.engine.engine.waitForLog((l) => l.seq === d.leg.seq && l.aborted, 2000);
    await stack.idle();
  });
});
