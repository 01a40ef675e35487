/**
 * Prefill/decode faults over real loopback HTTP (NIXL): a failing prefill engine is retried on the
 * other one; when every prefill fails the client gets the engine's own answer and no decode is
 * sent; a decode failing before its first byte is retried on the other decode engine with the same
 * KV params and no new prefill; a client that leaves cancels whichever leg runs. After each, every
 * worker's load is back to 0 (each lease released once). Backoffs run on a fake clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SimLogEntry, SimOptions } from '../../src/sim/types.ts';
import { driveClock, FakeClock } from '../support/fake-clock.ts';
import type { RunningEngine } from '../support/harness.ts';
import { chatMessages, engineLog, legsOf, type PdStack, startPdStack } from '../support/pd-stack.ts';

type Body = Record<string, unknown>;

let stack: PdStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

async function start(
  options: {
    prefill?: Partial<SimOptions>[];
    decode?: Partial<SimOptions>[];
    decodes?: number;
    flags?: string[];
  } = {},
) {
  const clock = new FakeClock();
  stack = await startPdStack({
    engine: { tokens: 4 },
    prefill: (i) => options.prefill?.[i] ?? {},
    decode: (i) => options.decode?.[i] ?? {},
    ...(options.decodes === undefined ? {} : { decodes: options.decodes }),
    flags: () => options.flags ?? [],
    router: { clock },
  });
  return { s: stack, clock };
}

/** A prompt no earlier request shares: a cache miss, so the least-processed worker gets it. */
const fresh = (): Body => ({
  model: 'sim-model',
  messages: [{ role: 'user', content: `${crypto.randomUUID()} has nothing in common` }],
});

function post(s: PdStack, body: Body, signal?: AbortSignal) {
  return fetch(`${s.router.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/**
 * Sends fresh prompts one after another until `engine` has been tried (the second at the latest:
 * the first goes to one of two least-processed workers, the second to the other).
 */
async function untilTried(s: PdStack, clock: FakeClock, engine: RunningEngine) {
  for (let i = 0; i < 2; i++) {
    const res = await driveClock(clock, post(s, fresh()));
    const id = res.headers.get('x-request-id')!;
    const body = await res.text();
    if (engine.engine.log.some((l) => l.headers['x-request-id'] === id)) return { res, id, body };
  }
  throw new Error(`${engine.engine.id} never got a request`);
}

const first = (engines: RunningEngine[]) => Promise.any(engines.map((e) => e.engine.waitForLog(() => true)));

describe('prefill/decode faults', () => {
  it('a prefill engine answering 503: the prefill leg is retried on the other one, the client gets 200', async () => {
    const { s, clock } = await start({ prefill: [{ failure: { mode: 'status', status: 503 } }] });
    const p0 = s.prefill[0] as RunningEngine;
    const { res, id } = await untilTried(s, clock, p0);
    expect(res.status).toBe(200);
    const { prefill, decode } = legsOf(s, id);
    expect(prefill.map((l) => [l.engine.engine.id, l.leg.status])).toEqual([
      ['prefill-0', 503],
      ['prefill-1', 200],
    ]);
    expect(prefill[1]!.leg.body).toEqual(prefill[0]!.leg.body);
    expect(decode).toHaveLength(1);
    expect((decode[0]!.leg.body as Body).kv_transfer_params).toMatchObject({
      remote_engine_id: 'prefill-1-dp0',
    });
    await s.idle();
  });

  it("every prefill failing: the client gets the engine's own status and body, no decode leg is sent", async () => {
    const failing = (i: number) => ({
      failure: { mode: 'status' as const, status: 503, body: `{"error":{"message":"prefill ${i} is full"}}` },
    });
    const { s, clock } = await start({ prefill: [failing(0), failing(1)] });
    const res = await driveClock(clock, post(s, { model: 'sim-model', messages: chatMessages('full?') }));
    expect(res.status).toBe(503);
    const tried = engineLog(s.prefill).sort((a, b) => a.tMs - b.tMs);
    expect(tried.length).toBeGreaterThan(1);
    expect(tried.every((l) => l.status === 503)).toBe(true);
    const last = s.prefill.find((e) => e.engine.log.includes(tried.at(-1) as SimLogEntry))!;
    expect(await res.text()).toBe(`{"error":{"message":"${last.engine.id.replace('-', ' ')} is full"}}`);
    expect(new Set(tried.map((l) => l.headers['x-request-id']))).toEqual(
      new Set([res.headers.get('x-request-id')]),
    );
    expect(engineLog(s.decode)).toEqual([]);
    await s.idle();
  });

  it.each([
    ['503', { mode: 'status', status: 503 }, 503],
    ['a connection reset', { mode: 'reset' }, null],
  ] as const)(
    'a decode failing before its first byte (%s): retried on the other decode engine, same KV params, no new prefill',
    async (_name, failure, status) => {
      const { s, clock } = await start({ decode: [{ failure }] });
      const d0 = s.decode[0] as RunningEngine;
      const { res, id, body } = await untilTried(s, clock, d0);
      expect(res.status).toBe(200);
      expect(JSON.parse(body).choices[0].message.content).toBe(' Once upon a time');
      const { prefill, decode } = legsOf(s, id);
      expect(prefill).toHaveLength(1);
      // (A reset on a pooled connection may be resent once on a fresh one: it looks stale.)
      const tried = decode.map((l) => [l.engine.engine.id, l.leg.status]);
      expect(tried.at(-1)).toEqual(['decode-1', 200]);
      expect(new Set(tried.slice(0, -1).map(String))).toEqual(new Set([`decode-0,${status ?? ''}`]));
      const kv = (decode[0]!.leg.body as Body).kv_transfer_params;
      expect(kv).toMatchObject({
        remote_engine_id: `${prefill[0]!.engine.engine.id}-dp0`,
        remote_request_id: id,
      });
      for (const l of decode) expect(l.leg.body).toEqual(decode[0]!.leg.body);
      await s.idle();
    },
  );

  it("a decode that cannot start within the prefill's KV hold time: logged, and one fresh prefill", async () => {
    // One decode engine, busy once: it asks for 2 s, longer than the 1 s the prefill holds the KV.
    const busy = { mode: 'status', status: 503, first: 1, retryAfter: '2' } as const;
    const { s, clock } = await start({
      decode: [{ failure: busy }],
      decodes: 1,
      flags: ['--pd-kv-hold-secs', '1'],
    });
    const res = await driveClock(clock, post(s, { model: 'sim-model', messages: chatMessages('held?') }));
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id')!;
    const { prefill, decode } = legsOf(s, id);
    expect(prefill.map((l) => l.leg.status)).toEqual([200, 200]);
    expect(decode.map((l) => l.leg.status)).toEqual([503, 200]);
    // The fresh round has an id of its own, on both of its legs.
    expect(prefill.map((l) => l.leg.headers['x-request-id'])).toEqual([id, `${id}-2`]);
    expect(decode.map((l) => l.leg.headers['x-request-id'])).toEqual([id, `${id}-2`]);
    expect(s.logs.find((l) => l.level === 'warn' && l.request_id === id)?.msg).toBe(
      "decode leg could not start within the prefill's KV hold time (1 s): running a fresh prefill",
    );
    expect(await s.metrics()).toContain('vllm_router_pd_fresh_prefills_total{reason="kv_hold_expired"} 1');
    await s.idle();
  });

  it('a client leaving while the prefill leg runs: the prefill engine sees the abort, no decode is sent', async () => {
    const { s } = await start({ prefill: [{ ttftMs: 60_000 }, { ttftMs: 60_000 }] });
    const ctl = new AbortController();
    const pending = post(
      s,
      { model: 'sim-model', messages: chatMessages('slow prefill'), stream: true },
      ctl.signal,
    );
    const entry = await first(s.prefill);
    expect(s.prefill.some((e) => e.engine.stats().running === 1)).toBe(true);
    ctl.abort();
    await expect(pending).rejects.toThrow();
    const engine = s.prefill.find((e) => e.engine.log.includes(entry))!;
    const aborted = await engine.engine.waitForLog((l) => l.seq === entry.seq && l.aborted);
    expect(aborted).toMatchObject({ status: null, completed: false });
    await s.idle();
    expect(engineLog(s.decode)).toEqual([]);
  });

  it('a client leaving while the decode streams: the decode engine sees the abort', async () => {
    const { s } = await start({ decode: [{ itlMs: 60_000 }, { itlMs: 60_000 }] });
    const ctl = new AbortController();
    const res = await post(
      s,
      { model: 'sim-model', messages: chatMessages('slow decode'), stream: true },
      ctl.signal,
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const { value } = await reader.read(); // the first token (the next one is a minute away)
    expect(new TextDecoder().decode(value)).toContain('data: ');
    const id = res.headers.get('x-request-id')!;
    const { prefill, decode } = legsOf(s, id);
    expect(prefill.map((l) => l.leg.status)).toEqual([200]);
    expect(decode.map((l) => l.leg.tEndMs)).toEqual([null]);
    // The prefill's lease ended with its answer; the decode holds one while it streams.
    const loads = await s.loads();
    expect(loads[prefill[0]!.engine.url]).toBe(0);
    expect(loads[decode[0]!.engine.url]).toBe(1);
    ctl.abort();
    await reader.cancel().catch(() => {});
    const d = decode[0]!;
    await d.engine.engine.waitForLog((l) => l.seq === d.leg.seq && l.aborted);
    await s.idle();
  });
});
