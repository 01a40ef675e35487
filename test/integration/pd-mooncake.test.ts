/**
 * Mooncake prefill/decode over real loopback HTTP (`--kv-connector mooncake`): the router reads each
 * prefill engine's engine ids from its bootstrap server (`GET /query`, on the engine's HTTP port or
 * a separate port like Mooncake's 8998) at startup, retrying with backoff while a server is down
 * (fake clock), names the transfer itself, and with --pd-concurrent-dispatch sends the decode leg
 * before the prefill has answered (the simulated decode waits for the prefill's transfer).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningBootstrap, startBootstrapServer, startSimEngine } from '../../src/sim/node.ts';
import type { SimLogEntry } from '../../src/sim/types.ts';
import { FakeClock } from '../support/fake-clock.ts';
import type { RunningEngine } from '../support/harness.ts';
import { deadPort } from '../support/net.ts';
import {
  chat,
  chatMessages,
  engineLog,
  legPair,
  legsOf,
  type PdStack,
  sleepGate,
  startPdStack,
} from '../support/pd-stack.ts';

type Body = Record<string, unknown>;

const XFER = /^xfer-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let stack: PdStack | undefined;
let late: RunningBootstrap | undefined;
afterEach(async () => {
  await stack?.stop();
  await late?.close();
  stack = undefined;
  late = undefined;
});

/** The port each prefill engine's bootstrap server listens on. */
const bootstrapPortOf = (e: RunningEngine) => e.bootstrap?.port ?? e.port;

/** The bootstrap port the command line gave for a prefill engine. */
const bootstrapArg = (s: PdStack, e: RunningEngine) =>
  s.config.pd.prefill.find((p) => p.url === e.url)?.bootstrapPort;

/** `/query` requests an engine got, on the listener at `port`. */
const queries = (e: RunningEngine, port: number): SimLogEntry[] =>
  e.engine.probeLog.filter((l) => l.path === '/query' && l.headers.host === `127.0.0.1:${port}`);

/** The one prefill and one decode leg of a request, checked against what Mooncake expects. */
function assertMooncakeLegs(s: PdStack, requestId: string, original: Body) {
  const { prefill: p, decode: d } = legPair(s, requestId);
  const { stream_options: _o, ...rest } = original;
  const kv = (p.leg.body as Body).kv_transfer_params as Body;
  expect(p.leg.body).toEqual({ ...rest, max_tokens: 1, stream: false, kv_transfer_params: kv });
  expect(kv).toEqual({
    do_remote_decode: true,
    do_remote_prefill: false,
    transfer_id: expect.stringMatching(XFER),
  });
  expect(d.leg.body).toEqual({
    ...original,
    kv_transfer_params: {
      do_remote_decode: false,
      do_remote_prefill: true,
      transfer_id: kv.transfer_id,
      remote_bootstrap_addr: `http://127.0.0.1:${bootstrapArg(s, p.engine)}`,
      remote_engine_id: `${p.engine.engine.id}-dp0`,
    },
  });
  return { prefill: p, decode: d };
}

describe('Mooncake prefill/decode (sequential)', () => {
  it('queries each bootstrap server at startup; exact legs; the decode starts after its prefill answered', async () => {
    stack = await startPdStack({
      engine: { ttftMs: 5, tokens: 6 },
      // prefill-0 answers /query on its HTTP port, prefill-1 on a separate port (as Mooncake's 8998).
      prefill: (i) => (i === 1 ? { bootstrapPort: 0 } : {}),
      decode: () => ({ kvWaitMs: 2000 }),
      prefillArg: (e) => [e.url, String(bootstrapPortOf(e))],
      flags: () => ['--kv-connector', 'mooncake'],
    });
    const s = stack;
    const [p0, p1] = s.prefill as [RunningEngine, RunningEngine];
    expect(p1.bootstrap?.port).not.toBe(p1.port);
    expect(queries(p0, p0.port).map((q) => q.status)).toEqual([200]);
    expect(queries(p1, p1.bootstrap!.port).map((q) => q.status)).toEqual([200]);
    expect(queries(p1, p1.port)).toEqual([]);

    const bodies: Body[] = [
      { model: 'sim-model', messages: chatMessages('Mooncake one'), max_tokens: 4 },
      { model: 'sim-model', messages: chatMessages('Mooncake two'), stream: true },
      {
        model: 'sim-model',
        messages: [{ role: 'user', content: `${crypto.randomUUID()} a question of its own` }],
        stream: true,
        stream_options: { include_usage: true },
      },
      { model: 'sim-model', messages: [{ role: 'user', content: `${crypto.randomUUID()} another one` }] },
    ];
    const answers = await Promise.all(bodies.map((b) => chat(s, b)));
    expect(new Set(answers.map((a) => a.id)).size).toBe(bodies.length);
    expect(answers.map((a) => a.text)).toEqual([
      ' Once upon a time',
      ' Once upon a time the router',
      ' Once upon a time the router',
      ' Once upon a time the router',
    ]);
    const transfers = new Set<unknown>();
    for (const [i, body] of bodies.entries()) {
      const { prefill, decode } = assertMooncakeLegs(s, answers[i]!.id, body);
      transfers.add((decode.leg.body as { kv_transfer_params: Body }).kv_transfer_params.transfer_id);
      expect(decode.leg.tMs).toBeGreaterThanOrEqual(prefill.leg.tEndMs!);
    }
    expect(transfers.size).toBe(bodies.length);
    // Startup asked once per server; requests used what it learned.
    expect(queries(p0, p0.port)).toHaveLength(1);
    expect(queries(p1, p1.bootstrap!.port)).toHaveLength(1);
    await s.idle();
  });

  it('a prefill worker added by POST /workers has its bootstrap server queried, then serves prefill legs', async () => {
    stack = await startPdStack({
      engine: { ttftMs: 5, tokens: 3 },
      prefillArg: (e) => [e.url, String(e.port)],
      flags: () => ['--kv-connector', 'mooncake'],
    });
    const s = stack;
    const extra = await startSimEngine({ id: 'prefill-new', host: '127.0.0.1', port: 0, bootstrapPort: 0 });
    try {
      const port = extra.bootstrap!.port;
      const res = await s.api('/workers', {
        method: 'POST',
        body: { url: extra.url, role: 'prefill', bootstrap_port: port },
      });
      expect(res.status).toBe(201);
      await s.router.healthTick(); // looks for prefill workers its bootstrap lookup does not know yet
      expect(queries(extra, port).map((q) => q.status)).toEqual([200]);
      // Fresh prompts are cache misses: the least-processed prefill worker (the new one) gets one soon.
      let id: string | undefined;
      for (let i = 0; i < 3 && extra.engine.log.length === 0; i++) {
        id = (
          await chat(s, {
            model: 'sim-model',
            messages: [{ role: 'user', content: `${crypto.randomUUID()} q` }],
          })
        ).id;
      }
      expect(extra.engine.log).toHaveLength(1);
      const decode = s.decode.flatMap((e) => e.engine.log).find((l) => l.headers['x-request-id'] === id)!;
      expect((decode.body as Body).kv_transfer_params).toMatchObject({
        remote_bootstrap_addr: `http://127.0.0.1:${port}`,
        remote_engine_id: 'prefill-new-dp0',
      });
      expect(queries(extra, port)).toHaveLength(1);
    } finally {
      await extra.close();
    }
  });

  it('bootstrap servers down at startup: retried with backoff until they answer (fake clock)', async () => {
    const clock = new FakeClock();
    const port = await deadPort(); // prefill-1's bootstrap server comes up only later
    stack = await startPdStack({
      engine: { ttftMs: 5, tokens: 3 },
      prefill: (i) => (i === 0 ? { queryFailFirst: 2 } : {}), // prefill-0: 503, 503, then its ids
      prefillArg: (e, i) => [e.url, String(i === 0 ? e.port : port)],
      flags: () => ['--kv-connector', 'mooncake'],
      router: { clock, startup: 'background' },
    });
    const s = stack;
    const [p0, p1] = s.prefill as [RunningEngine, RunningEngine];
    let ready: boolean | undefined;
    void s.router.ready.then((r) => {
      ready = r;
    });
    const failed = () => s.logs.filter((l) => l.msg === 'mooncake bootstrap query failed');
    // Round 1: both fail, then the warm-up sleeps 500 ms.
    await expect.poll(() => clock.requested.includes(500), { timeout: 5000, interval: 5 }).toBe(true);
    expect(failed().map((l) => [l.bootstrap, l.failures])).toEqual(
      expect.arrayContaining([
        [`http://127.0.0.1:${p0.port}`, 1],
        [`http://127.0.0.1:${port}`, 1],
      ]),
    );
    expect(failed().find((l) => l.bootstrap === `http://127.0.0.1:${p0.port}`)?.error).toBe('status 503');
    late = await startBootstrapServer(p1.engine, { port });
    clock.advance(500);
    // Round 2: prefill-1's server is up; prefill-0 answers 503 again; the next sleep is twice as long.
    await expect.poll(() => clock.requested.includes(1000), { timeout: 5000, interval: 5 }).toBe(true);
    expect(queries(p1, port).map((q) => q.status)).toEqual([200]);
    expect(ready).toBeUndefined();
    clock.advance(1000);
    expect(await s.router.ready).toBe(true);
    expect(queries(p0, p0.port).map((q) => q.status)).toEqual([503, 503, 200]);
    expect(
      s.logs.filter((l) => l.msg === 'mooncake bootstrap server answered').map((l) => l.engine_ids),
    ).toEqual(expect.arrayContaining([{ 0: 'prefill-0-dp0' }, { 0: 'prefill-1-dp0' }]));

    // Both prefill engines are usable: unrelated prompts reach each (least processed first).
    for (let i = 0; i < 2; i++) {
      const body = {
        model: 'sim-model',
        messages: [{ role: 'user', content: `${crypto.randomUUID()} q${i}` }],
      };
      const { id } = await chat(s, body);
      const { prefill } = assertMooncakeLegs(s, id, body);
      expect(prefill.engine).toBe(i === 0 ? p0 : p1);
    }
    // p1's bootstrap address is the late server's.
    const d = s.decode
      .flatMap((e) => e.engine.log)
      .map((l) => (l.body as { kv_transfer_params: Body }).kv_transfer_params);
    expect(d.map((kv) => kv.remote_bootstrap_addr)).toContain(`http://127.0.0.1:${port}`);
  });
});

describe('Mooncake with --intra-node-data-parallel-size 2', () => {
  it("remote_engine_id is the /query engine id of the prefill's DP rank", async () => {
    stack = await startPdStack({
      engine: { dpSize: 2, tokens: 2 },
      prefill: () => ({ bootstrapPort: 0 }),
      prefillArg: (e) => [e.url, String(e.bootstrap!.port)],
      flags: () => ['--kv-connector', 'mooncake', '--intra-node-data-parallel-size', '2'],
    });
    const s = stack;
    const seen = new Set<string>();
    // Unrelated prompts, one after another: each (engine, rank) prefill worker gets one.
    for (let i = 0; i < 4; i++) {
      const { id } = await chat(s, {
        model: 'sim-model',
        messages: [{ role: 'user', content: crypto.randomUUID() }],
      });
      const { prefill, decode } = legsOf(s, id);
      const rank = prefill[0]!.leg.headers['x-data-parallel-rank'];
      seen.add(`${prefill[0]!.engine.engine.id}-dp${rank}`);
      expect((decode[0]!.leg.body as Body).kv_transfer_params).toMatchObject({
        remote_bootstrap_addr: `http://127.0.0.1:${prefill[0]!.engine.bootstrap!.port}`,
        remote_engine_id: `${prefill[0]!.engine.engine.id}-dp${rank}`,
      });
    }
    expect([...seen].sort()).toEqual(['prefill-0-dp0', 'prefill-0-dp1', 'prefill-1-dp0', 'prefill-1-dp1']);
    // One /query per bootstrap server, not per rank.
    for (const p of s.prefill) expect(queries(p, p.bootstrap!.port)).toHaveLength(1);
  });
});

describe('Mooncake with --pd-concurrent-dispatch', () => {
  it('the decode leg arrives before the prefill answered, and the answer is still right', async () => {
    // The prefill engines answer only once the gate opens: after every decode leg has arrived.
    const gate = sleepGate();
    gate.close();
    stack = await startPdStack({
      engine: { tokens: 5 },
      prefill: () => ({ ttftMs: 1, sleep: gate.sleep, bootstrapPort: 0 }),
      decode: () => ({ kvWaitMs: 5000 }),
      prefillArg: (e) => [e.url, String(bootstrapPortOf(e))],
      flags: () => ['--kv-connector', 'mooncake', '--pd-concurrent-dispatch'],
    });
    const s = stack;
    const bodies: Body[] = [
      { model: 'sim-model', messages: chatMessages('concurrent one'), max_tokens: 3 },
      { model: 'sim-model', messages: chatMessages('concurrent two'), stream: true },
      { model: 'sim-model', messages: [{ role: 'user', content: `${crypto.randomUUID()} q` }], stream: true },
    ];
    const sent = Promise.all(bodies.map((b) => chat(s, b)));
    await expect.poll(() => engineLog(s.decode).length, { timeout: 5000, interval: 5 }).toBe(bodies.length);
    expect(engineLog(s.prefill).map((l) => l.status)).toEqual([null, null, null]);
    gate.open();
    const answers = await sent;
    expect(answers.map((a) => a.text)).toEqual([
      ' Once upon a',
      ' Once upon a time the',
      ' Once upon a time the',
    ]);
    for (const [i, body] of bodies.entries()) {
      const { prefill, decode } = assertMooncakeLegs(s, answers[i]!.id, body);
      expect(prefill.leg.status).toBe(200);
      // Sent without waiting: the decode arrived while the prefill was still running...
      expect(decode.leg.tMs).toBeLessThan(prefill.leg.tEndMs!);
      // ...and generated only once the prefill engine's transfer was done (it waited for the KV).
      expect(decode.leg.tEndMs!).toBeGreaterThanOrEqual(prefill.leg.tEndMs!);
    }
    await s.idle();
  });
});
