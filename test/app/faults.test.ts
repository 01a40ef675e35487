/**
 * One bad engine never takes traffic down (issue 11), the core app in memory with default flags,
 * the default cache_aware policy and conversations sharing a long system prompt, several requests
 * at once, streaming and not. Stall checks run on the fake clock: the test advances it.
 */
import { describe, expect, it } from 'vitest';
import { type AppStack, chatBody, checkLeasesAfterEach, readChunks, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const TWO_ENGINES = '--worker-urls http://a.test http://b.test';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Sends `n` requests at once (every other one streaming), without driving the clock. */
function burst(app: AppStack, n: number): Promise<Response>[] {
  return Array.from({ length: n }, (_, i) =>
    app.post(chatBody(`Question ${i}: which platform for Grindelwald?`, { stream: i % 2 === 0 }), {
      drive: false,
    }),
  );
}

/** Advances the fake clock a second at a time until every response is settled (or `maxSecs`). */
async function advanceUntilSettled(app: AppStack, pending: Promise<Response>[], maxSecs: number) {
  let done = 0;
  for (const p of pending) void p.finally(() => done++);
  let secs = 0;
  for (; secs < maxSecs && done < pending.length; secs++) {
    for (let i = 0; i < 20; i++) await flush();
    app.clock.advance(1000);
  }
  for (let i = 0; i < 20; i++) await flush();
  return secs;
}

async function bodies(responses: Response[]): Promise<void> {
  for (const res of responses) {
    if (res.headers.get('content-type')?.includes('event-stream')) {
      const text = (await readChunks(res)).join('');
      expect(text).toContain('[DONE]');
      expect(text).not.toContain('upstream_stream_error');
    } else {
      expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    }
  }
}

describe('faults of one engine (core app in memory)', () => {
  it.each([
    ['accepts the connection and never answers', { mode: 'hang' as const }],
    ['sends its headers, then stalls', { mode: 'stall' as const }],
  ])('engine A %s: every request is answered by B after the stall is detected', async (_name, failure) => {
    const app = await startApp(TWO_ENGINES, { 'a.test': { failure }, 'b.test': {} });
    const pending = burst(app, 6);
    const secs = await advanceUntilSettled(app, pending, 60);
    const responses = await Promise.all(pending);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    for (const r of responses) expect(r.headers.get('x-routed-worker-id')).toBe('http://b.test');
    await bodies(responses);
    // Streaming attempts are given up after 5 s of silence, non-streaming ones after 30 s.
    expect(secs).toBeLessThanOrEqual(35);
    expect(await app.metric('vllm_router_cb_outcomes_total', 'outcome="failure"')).toBeGreaterThan(0);
    const hungOnA = app.net.calls.filter((c) => c.host === 'a.test' && c.method === 'POST');
    expect(hungOnA.every((c) => c.outcome !== 'pending')).toBe(true); // abandoned, not left open
  });

  it('does not take a lone slow request on a busy-free fleet for a hang (no canary, no abandonment)', async () => {
    const app = await startApp('--worker-urls http://a.test', { 'a.test': { failure: { mode: 'hang' } } });
    const pending = app.post(chatBody('One long answer, please.'), { drive: false });
    for (let s = 0; s < 40; s++) {
      for (let i = 0; i < 10; i++) await flush();
      app.clock.advance(1000);
    }
    const calls = app.net.calls.filter((c) => c.method === 'POST');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.outcome).toBe('pending');
    app.clock.advance(1_800_000); // the request deadline ends it
    expect((await pending).status).toBe(504);
  });

  it('a 200 whose body breaks after the first bytes is never retried: the client sees the cut', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { failure: { mode: 'midstream' } },
      'b.test': { failure: { mode: 'midstream' } },
    });
    const res = await app.post(chatBody('Tell me about the north face.', { stream: true }));
    expect(res.status).toBe(200);
    expect((await readChunks(res)).join('')).toContain('upstream_stream_error');
    expect(app.net.calls.filter((c) => c.method === 'POST')).toHaveLength(1);
  });

  it('a 429 with Retry-After sends the retry to B at once and keeps new requests off A', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { failure: { mode: 'status', status: 429, retryAfter: '1' } },
      'b.test': {},
    });
    for (let i = 0; i < 6; i++) {
      const res = await app.post(chatBody(`Is the ${i}th train late?`, { stream: i % 2 === 0 }));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-routed-worker-id')).toBe('http://b.test');
      await res.arrayBuffer();
    }
    expect(app.backoffs()).toEqual([]);
    const onA = app.net.calls.filter((c) => c.host === 'a.test' && c.method === 'POST');
    expect(onA.length).toBeLessThanOrEqual(1);
  });
});
