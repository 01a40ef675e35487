import { describe, expect, it } from 'vitest';
import { parseFlagValue, SIM_FLAGS } from '../../../src/sim/config.ts';
import { createSimEngine, type SimEngine } from '../../../src/sim/engine.ts';
import { createFailurePlanner, cutPoint, validatePlan } from '../../../src/sim/plan.ts';

function chat(engine: SimEngine, extra: Record<string, unknown> = {}) {
  return engine.fetch(
    new Request('http://sim/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...extra }),
    }),
  );
}

const decoder = new TextDecoder();

/** The next read, or 'pending' if nothing arrived within a few event-loop turns. */
async function readOrPending(pending: Promise<ReadableStreamReadResult<Uint8Array>>): Promise<string> {
  const tick = new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 30));
  const result = await Promise.race([pending, tick]);
  if (result === 'pending') return result;
  return result.done ? '<done>' : decoder.decode(result.value);
}

describe('sim engine: stall (headers, then nothing)', () => {
  it('SSE: answers 200 with event-stream headers, sends no byte, settles when the reader leaves', async () => {
    const engine = createSimEngine({ tokens: 4, failure: { mode: 'stall' } });
    const res = await chat(engine, { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const first = reader.read();
    expect(await readOrPending(first)).toBe('pending');
    expect(engine.log[0]).toMatchObject({ injected: 'stall', tEndMs: null, tokensSent: 0 });
    await reader.cancel();
    expect((await first).done).toBe(true);
    expect(engine.log[0]).toMatchObject({ status: 200, completed: false, aborted: true, tokensSent: 0 });
    expect(engine.log[0]!.tEndMs).not.toBeNull();
    expect(engine.stats()).toMatchObject({ failed_injected_total: 1, aborted_total: 1, success_total: 0 });
  });

  it('SSE: with cutAfterChunks, sends that many token chunks first, then stalls (no [DONE])', async () => {
    const engine = createSimEngine({ tokens: 6, failure: { mode: 'stall', cutAfterChunks: 2 } });
    const res = await chat(engine, { stream: true });
    const reader = res.body!.getReader();
    let text = '';
    for (;;) {
      const got = await readOrPending(reader.read());
      if (got === 'pending') break;
      text += got;
    }
    expect(text.match(/"content":" /g)).toHaveLength(2);
    expect(text).not.toContain('[DONE]');
    expect(engine.log[0]).toMatchObject({ tokensSent: 2, tEndMs: null });
    await reader.cancel();
    expect(engine.log[0]).toMatchObject({ completed: false, aborted: true, tokensSent: 2 });
  });

  it('JSON: promises the full content-length and sends none of it', async () => {
    const engine = createSimEngine({ failure: { mode: 'stall' } });
    const res = await chat(engine);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(Number(res.headers.get('content-length'))).toBeGreaterThan(50);
    const reader = res.body!.getReader();
    const first = reader.read();
    expect(await readOrPending(first)).toBe('pending');
    await reader.cancel();
    expect((await first).done).toBe(true);
    expect(engine.log[0]).toMatchObject({ status: 200, completed: false, aborted: true });
  });

  it('follows the plan selection: the first N stall, the rest answer normally', async () => {
    const engine = createSimEngine({ failure: { mode: 'stall', first: 1 } });
    const stalled = await chat(engine);
    const ok = await chat(engine);
    expect(ok.status).toBe(200);
    expect((await ok.json()) as object).toHaveProperty('choices');
    expect(engine.log.map((e) => e.injected)).toEqual(['stall', null]);
    await stalled.body!.cancel();
  });

  it('is a valid mode for plans and the --fail-mode flag; its default cut point is 0', () => {
    expect(validatePlan({ mode: 'stall', cutAfterChunks: 3 })).toEqual({ mode: 'stall', cutAfterChunks: 3 });
    const flag = SIM_FLAGS.find((f) => f.name === 'fail-mode')!;
    expect(parseFlagValue(flag, 'stall')).toBe('stall');
    expect(cutPoint({ mode: 'stall' }, 16)).toBe(0);
    expect(cutPoint({ mode: 'stall', cutAfterChunks: 5 }, 16)).toBe(5);
    expect(cutPoint({ mode: 'midstream' }, 16)).toBe(8);
    const p = createFailurePlanner({ mode: 'stall', first: 1 }, 1);
    expect([p.next(), p.next()]).toEqual(['stall', null]);
  });
});
