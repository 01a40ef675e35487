import { describe, expect, it } from 'vitest';
import { createSimEngine, type SimEngine, type SimSleep } from '../../../src/sim/engine.ts';

/** A sleep whose waits the test releases one at a time. */
function steppedSleep() {
  const waits: Array<{ ms: number; release: () => void }> = [];
  let notify: (() => void) | undefined;
  const sleep: SimSleep = (ms, signal) =>
    new Promise<void>((resolve) => {
      signal?.addEventListener('abort', () => resolve(), { once: true });
      waits.push({ ms, release: resolve });
      notify?.();
    });
  /** Resolves with the n-th wait (0-based) once the engine asks for it. */
  const nth = async (n: number) => {
    while (waits.length <= n) await new Promise<void>((resolve) => (notify = resolve));
    return waits[n]!;
  };
  return { sleep, nth };
}

function streamChat(engine: SimEngine, signal?: AbortSignal) {
  return engine.fetch(
    new Request('http://sim/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], stream: true }),
      signal,
    }),
  );
}

const decoder = new TextDecoder();

describe('sim engine: token timing', () => {
  it('writes each token when its time comes: TTFT first, then one per ITL', async () => {
    const { sleep, nth } = steppedSleep();
    // A frozen clock: time passes only when the test says so, however busy the machine is.
    const engine = createSimEngine({ tokens: 3, ttftMs: 40, itlMs: 10, sleep, now: () => 0 });
    const res = await streamChat(engine);
    const reader = res.body!.getReader();

    const firstRead = reader.read();
    const ttft = await nth(0);
    expect(ttft.ms).toBe(40);
    ttft.release();
    const first = decoder.decode((await firstRead).value);
    expect(first).toContain('"role":"assistant"');
    expect(first.match(/"content":" /g)).toHaveLength(1);
    expect(engine.log[0]).toMatchObject({ tokensSent: 1, tEndMs: null });

    const secondRead = reader.read();
    const itl = await nth(1);
    // Deadlines are absolute (start + TTFT + i × ITL); this fake sleep did not let time pass.
    expect(itl.ms).toBe(50);
    itl.release();
    expect(decoder.decode((await secondRead).value).match(/"content":" /g)).toHaveLength(1);

    const lastRead = reader.read();
    (await nth(2)).release();
    const last = decoder.decode((await lastRead).value);
    expect(last).toContain('"finish_reason":"stop"');
    expect(last.endsWith('data: [DONE]\n\n')).toBe(true);
    expect((await reader.read()).done).toBe(true);
    expect(engine.log[0]).toMatchObject({ completed: true, tokensSent: 3 });
    expect(engine.log[0]!.tEndMs).not.toBeNull();
  });

  it('records a client that cancels the stream as aborted and frees its running slot', async () => {
    const { sleep, nth } = steppedSleep();
    const engine = createSimEngine({ tokens: 5, ttftMs: 5, itlMs: 5, maxRunning: 1, sleep });
    const res = await streamChat(engine);
    const reader = res.body!.getReader();
    const read = reader.read();
    (await nth(0)).release();
    await read;
    expect(engine.stats().running).toBe(1);
    await reader.cancel();
    const entry = await engine.waitForLog((e) => e.tEndMs !== null);
    expect(entry).toMatchObject({ aborted: true, completed: false, status: 200, tokensSent: 1 });
    expect(engine.stats()).toMatchObject({ running: 0, aborted_total: 1, success_total: 0 });
  });

  it('records a client that goes away via the request signal as aborted', async () => {
    const { sleep, nth } = steppedSleep();
    const engine = createSimEngine({ tokens: 2, ttftMs: 100, sleep });
    const ac = new AbortController();
    const pending = engine.fetch(
      new Request('http://sim/v1/completions', { method: 'POST', body: '{"prompt":"p"}', signal: ac.signal }),
    );
    await nth(0); // the engine is computing the answer
    ac.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(engine.log[0]).toMatchObject({ aborted: true, completed: false, status: null });
  });

  it('answers zero-delay requests without asking for any sleep', async () => {
    const { sleep, nth } = steppedSleep();
    const engine = createSimEngine({ sleep });
    await (await streamChat(engine)).text();
    const noWait = Promise.race([nth(0).then(() => 'slept'), Promise.resolve('none')]);
    expect(await noWait).toBe('none');
  });
});
