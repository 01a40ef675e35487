import { describe, expect, it, vi } from 'vitest';
import { createSimEngine, type SimEngine, type SimOptions } from '../../../src/sim/engine.ts';
import { createFailurePlanner, cutPoint, seededRandom, validatePlan } from '../../../src/sim/plan.ts';

function chat(engine: SimEngine, extra: Record<string, unknown> = {}, signal?: AbortSignal) {
  return engine.fetch(
    new Request('http://sim/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...extra }),
      signal,
    }),
  );
}

async function statuses(engine: SimEngine, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await chat(engine)).status);
  return out;
}

/** Reads a body until it ends or errors; returns the text received and the error, if any. */
async function drain(res: Response): Promise<{ text: string; error: unknown }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: undefined };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe('sim engine: failure plans', () => {
  it('fails the first N inference requests with the status, then recovers', async () => {
    const engine = createSimEngine({ failure: { mode: 'status', status: 500, first: 2 } });
    expect(await statuses(engine, 4)).toEqual([500, 500, 200, 200]);
    expect(engine.log.map((e) => e.injected)).toEqual(['status', 'status', null, null]);
    expect(engine.stats().failed_injected_total).toBe(2);
    engine.configure({ failure: { mode: 'status', status: 429, first: 1 } });
    expect(await statuses(engine, 2)).toEqual([429, 200]);
  });

  it('fails a seeded, reproducible fraction', async () => {
    const plan: SimOptions['failure'] = { mode: 'status', status: 503, rate: 0.3 };
    const a = await statuses(createSimEngine({ seed: 42, failure: plan }), 100);
    const b = await statuses(createSimEngine({ seed: 42, failure: plan }), 100);
    const c = await statuses(createSimEngine({ seed: 7, failure: plan }), 100);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    const failed = a.filter((s) => s === 503).length;
    expect(failed).toBeGreaterThan(15);
    expect(failed).toBeLessThan(45);
    const engine = createSimEngine({ seed: 42, failure: plan });
    await statuses(engine, 10);
    engine.reset();
    expect(await statuses(engine, 100)).toEqual(a);
  });

  it('fails everything without a selection, nothing with rate 0 or mode none', async () => {
    expect(await statuses(createSimEngine({ failure: { mode: 'status' } }), 3)).toEqual([503, 503, 503]);
    expect(await statuses(createSimEngine({ failure: { mode: 'status', rate: 0 } }), 3)).toEqual([
      200, 200, 200,
    ]);
    expect(await statuses(createSimEngine({ failure: { mode: 'none', first: 5 } }), 2)).toEqual([200, 200]);
  });

  it('sends Retry-After and the OpenAI-shaped error, or the fail body verbatim', async () => {
    const engine = createSimEngine({ id: 'x', failure: { mode: 'status', status: 429, retryAfter: '2' } });
    const res = await chat(engine);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('x-sim-engine')).toBe('x');
    expect(await res.json()).toEqual({
      error: { message: 'simulated failure (429)', type: 'RateLimitError', param: null, code: 429 },
    });
    engine.configure({ failure: { mode: 'status', status: 503, body: 'engine-says-no' } });
    const text = await chat(engine);
    expect(text.headers.get('retry-after')).toBeNull();
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await text.text()).toBe('engine-says-no');
    engine.configure({ failure: { mode: 'status', status: 503, body: '{"detail":"busy"}' } });
    const json = await chat(engine);
    expect(json.headers.get('content-type')).toBe('application/json');
    expect(await json.text()).toBe('{"detail":"busy"}');
  });

  it('applies to inference only: health, metrics and models keep answering', async () => {
    const engine = createSimEngine({ failure: { mode: 'reset' } });
    for (const path of ['/health', '/metrics', '/v1/models', '/get_server_info']) {
      expect((await engine.fetch(new Request(`http://sim${path}`))).status).toBe(200);
    }
    await expect(chat(engine)).rejects.toThrow(TypeError);
  });

  it('hang: never answers until the client aborts, then rejects and logs the abort', async () => {
    const engine = createSimEngine({ failure: { mode: 'hang' } });
    const ac = new AbortController();
    const pending = chat(engine, {}, ac.signal);
    const settled = vi.fn();
    pending.then(settled, settled);
    const entry = await engine.waitForLog((e) => e.injected === 'hang');
    expect(entry.tEndMs).toBeNull();
    expect(settled).not.toHaveBeenCalled();
    ac.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(entry).toMatchObject({ aborted: true, completed: false, status: null });
    expect(entry.tEndMs).not.toBeNull();
    expect(engine.stats().aborted_total).toBe(1);
  });

  it('reset: rejects like a network error without a hook, calls the hook when supplied', async () => {
    const engine = createSimEngine({ failure: { mode: 'reset' } });
    const err = await chat(engine).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).cause).toMatchObject({ code: 'ECONNRESET' });
    expect(engine.log[0]).toMatchObject({
      status: null,
      completed: false,
      aborted: false,
      injected: 'reset',
    });

    const ac = new AbortController();
    const resetConnection = vi.fn(() => ac.abort());
    const hooked = createSimEngine({ failure: { mode: 'reset' }, resetConnection });
    await expect(chat(hooked, {}, ac.signal)).rejects.toThrow(TypeError);
    expect(resetConnection).toHaveBeenCalledTimes(1);
  });

  it('midstream SSE: sends cutAfterChunks token chunks, then the stream errors without [DONE]', async () => {
    const engine = createSimEngine({ tokens: 6, failure: { mode: 'midstream', cutAfterChunks: 2 } });
    const res = await chat(engine, { stream: true });
    expect(res.status).toBe(200);
    const { text, error } = await drain(res);
    expect(error).toBeInstanceOf(TypeError);
    expect(text).not.toContain('[DONE]');
    expect(text.match(/"content":" /g)).toHaveLength(2);
    expect(engine.log[0]).toMatchObject({ status: 200, completed: false, aborted: false, tokensSent: 2 });
    // default cut point: half of the tokens
    engine.configure({ failure: { mode: 'midstream' } });
    const half = await drain(await chat(engine, { stream: true }));
    expect(half.text.match(/"content":" /g)).toHaveLength(3);
  });

  it('midstream JSON: promises the full content-length and delivers half of it', async () => {
    const engine = createSimEngine({ failure: { mode: 'midstream' } });
    const res = await chat(engine);
    expect(res.status).toBe(200);
    const promised = Number(res.headers.get('content-length'));
    const { text, error } = await drain(res);
    expect(error).toBeInstanceOf(TypeError);
    expect(text.length).toBe(Math.floor(promised / 2));
    expect(() => JSON.parse(text)).toThrow();
  });

  it('midstream with a cut hook: the hook cuts, the stream does not end cleanly', async () => {
    const cutConnection = vi.fn();
    const engine = createSimEngine({
      tokens: 4,
      failure: { mode: 'midstream', cutAfterChunks: 1 },
      cutConnection,
    });
    const res = await chat(engine, { stream: true });
    const reader = res.body!.getReader();
    await reader.read();
    const next = reader.read();
    await engine.waitForLog((e) => e.tEndMs !== null);
    expect(cutConnection).toHaveBeenCalledTimes(1);
    expect(engine.log[0]).toMatchObject({ completed: false, tokensSent: 1 });
    await reader.cancel(); // what the server does when the socket closes
    expect((await next).done).toBe(true);
  });

  it('plans validate their fields and compute the cut point', () => {
    expect(() => validatePlan({ mode: 'explode' as never })).toThrow(/failure.mode/);
    expect(() => validatePlan({ mode: 'status', rate: 2 })).toThrow(/failure.rate/);
    expect(() => validatePlan({ mode: 'status', status: 42 })).toThrow(/failure.status/);
    expect(cutPoint({ mode: 'midstream' }, 16)).toBe(8);
    expect(cutPoint({ mode: 'midstream' }, 1)).toBe(1);
    expect(cutPoint({ mode: 'midstream', cutAfterChunks: 99 }, 4)).toBe(4);
    const p = createFailurePlanner({ mode: 'hang', first: 1 }, 1);
    expect([p.next(), p.next()]).toEqual(['hang', null]);
    const r = seededRandom(3);
    const values = Array.from({ length: 1000 }, r);
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
  });
});
