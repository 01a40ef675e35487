/**
 * The fleet sharded by model pool, end to end through the Worker: two engines serve two models
 * (duo-a, duo-b), so each model's requests go to its own pool object while the main object keeps
 * the registry. Shown: one route and one settle per request, on the pool's object; an admin
 * removal through the main object takes effect at once in the pool's object (a leased worker
 * drains there); /finish_session reaches the pool's object; a breaker one pool opened keeps the
 * other pool off that engine. Object-level details of the sync: pool-object.test.ts.
 */
import { SELF } from 'cloudflare:test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admin,
  callsOf,
  configureEngine,
  engineLog,
  engines,
  made,
  post,
  resetEngine,
  routerFleetStub,
  routerPoolStub,
  until,
} from './helpers.ts';

const [duo1, duo2] = engines.duo;
const workerPath = (id: string) => `http://router/workers/${encodeURIComponent(id)}`;

const addDuo = async (url: string) => {
  const res = await admin('http://router/workers', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url, circuit_breaker: { failure_threshold: 1 } }),
  });
  expect(res.status).toBe(201);
};

const chat = (model: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, max_tokens: 4, messages: [{ role: 'user', content: 'Hello' }], ...extra });

/** One request for `model`, read to its end; the engine that answered. */
const ask = async (model: string, headers: Record<string, string> = {}) => {
  const res = await post(chat(model), '/v1/chat/completions', headers);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  return res.headers.get('x-routed-worker-id') as string;
};

/** What a pool object holds (its registry copy, with its own loads). */
const poolView = (model: string) => routerPoolStub(model).snapshot();

/** Every lease of `model`'s pool object settled (the settle runs after the response, in waitUntil). */
const settled = (model: string) =>
  until(async () => {
    const calls = await callsOf(routerPoolStub(model));
    return calls.settle === calls.route;
  });

beforeAll(async () => {
  for (const url of engines.duo) {
    await configureEngine(url, { 'fail-mode': 'none' });
    await addDuo(url);
  }
  expect((await (await admin(workerPath(duo1))).json()) as object).toMatchObject({
    healthy: true,
    models: ['duo-a', 'duo-b'],
  });
  // The isolate learns which models have a pool object from its first answers.
  for (const model of ['duo-a', 'duo-b']) await ask(model);
  for (const model of ['duo-a', 'duo-b']) await settled(model);
});

afterAll(async () => {
  for (const url of engines.duo) {
    await configureEngine(url, { 'fail-mode': 'none', tokens: 16, 'itl-ms': 2 });
    await admin(workerPath(url), { method: 'DELETE' });
  }
});

/** `leased` holds `stream`'s lease in duo-a's pool object: remove it, and watch it drain. */
const drainsInPool = async (stream: Response, leased: string) => {
  expect(stream.status).toBe(200);
  const other = leased === duo1 ? duo2 : duo1;
  expect((await admin(workerPath(leased), { method: 'DELETE' })).status).toBe(202);

  // The admin call answered once the pool objects had the change: no request reaches it now.
  for (let i = 0; i < 3; i++) expect(await ask('duo-a')).toBe(other);
  const draining = (await poolView('duo-a')).workers.find((w) => w.id === leased);
  expect(draining).toMatchObject({ draining: true, load: 1 });
  // The admin API lists it as draining, with the pool's lease, as long as that lasts.
  expect(await (await admin(workerPath(leased))).json()).toMatchObject({ draining: true, load: 1 });

  // Its request in flight finishes there; then the pool's object forgets it, and so does the listing.
  expect(await stream.text()).toContain('[DONE]');
  await expect.poll(async () => (await poolView('duo-a')).workers.some((w) => w.id === leased)).toBe(false);
  expect((await admin(workerPath(leased))).status).toBe(404);
};

describe('the fleet sharded by model pool', () => {
  it("sends each model's requests to its own pool object: one route and one settle each", async () => {
    const before = {
      main: await callsOf(routerFleetStub()),
      a: await callsOf(routerPoolStub('duo-a')),
      b: await callsOf(routerPoolStub('duo-b')),
    };
    for (let i = 0; i < 3; i++) await ask('duo-a');
    for (let i = 0; i < 2; i++) await ask('duo-b');
    await settled('duo-a');
    await settled('duo-b');
    expect(made(await callsOf(routerPoolStub('duo-a')), before.a)).toEqual({ route: 3, settle: 3 });
    expect(made(await callsOf(routerPoolStub('duo-b')), before.b)).toEqual({ route: 2, settle: 2 });
    expect(made(await callsOf(routerFleetStub()), before.main)).toEqual({});

    // Listings and /metrics still show the whole fleet: the pools' loads, counts and calls.
    const listed = (await (await admin('http://router/get_loads')).json()) as {
      workers: { worker: string; load: number }[];
    };
    expect(listed.workers.filter((w) => engines.duo.includes(w.worker)).map((w) => w.load)).toEqual([0, 0]);
    const metrics = await (await admin('http://router/metrics')).text();
    expect(metrics).toContain(
      'vllm_router_fleet_object_calls_total{method="route",object="fleet/pool:duo-a"}',
    );
    const processed = (url: string) =>
      Number(
        metrics
          .split('\n')
          .find((l) => l.startsWith(`vllm_router_processed_requests_total{worker="${url}"} `))
          ?.split(' ')[1],
      );
    expect(processed(duo1) + processed(duo2)).toBeGreaterThanOrEqual(7);
  });

  it("a removal through the main object takes effect at once in a pool's object; a leased worker drains there", async () => {
    for (const url of engines.duo) await configureEngine(url, { tokens: 30, 'itl-ms': 20 });
    const stream = await post(chat('duo-a', { stream: true, max_tokens: 30 }));
    const leased = stream.headers.get('x-routed-worker-id') as string;
    try {
      await drainsInPool(stream, leased);
    } finally {
      if (!stream.bodyUsed) await stream.body?.cancel();
      for (const url of engines.duo) await configureEngine(url, { tokens: 16, 'itl-ms': 2 });
      if ((await admin(workerPath(leased))).status === 404) await addDuo(leased);
    }
  });

  it("/finish_session reaches the session's pool object", async () => {
    const session = `shard-${crypto.randomUUID()}`;
    const pinned = async (worker: string) => {
      const text = await routerPoolStub('duo-b').metricsText();
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`vllm_router_sll_pinned_sessions{worker="${worker}"} `));
      return line === undefined ? 0 : Number(line.split(' ')[1]);
    };
    const placed = await ask('duo-b', { 'x-session-id': session });
    const before = await pinned(placed);
    expect(before).toBeGreaterThan(0);
    expect(await ask('duo-b', { 'x-session-id': session })).toBe(placed);
    const finished = await SELF.fetch(`http://router/finish_session?session_id=${session}`, {
      method: 'POST',
    });
    expect(await finished.json()).toEqual({ session_id: session, finished: true });
    expect(await pinned(placed)).toBe(before - 1);
  });

  it('a breaker one pool opened keeps the other pool off that engine', async () => {
    await configureEngine(duo1, { 'fail-mode': 'status', 'fail-status': 500 });
    await resetEngine(duo1);
    // duo-a's requests alternate between the two (least loaded, then least processed): one of the
    // first two meets duo1's 500, opens its breaker (threshold 1) and is retried on duo2.
    for (let i = 0; i < 2; i++) expect(await ask('duo-a')).toBe(duo2);
    expect((await engineLog(duo1)).length).toBeGreaterThan(0);
    // The pool's object reported it to the main object, which pushed it to the other pools.
    const circuit = async (model: string) =>
      (await poolView(model)).workers.find((w) => w.id === duo1)?.circuit;
    await expect.poll(() => circuit('duo-b')).toBe('open');
    const main = (await (await admin(workerPath(duo1))).json()) as { circuit: string };
    expect(main.circuit).toBe('open');

    // duo-b's requests would alternate too: none reaches duo1.
    await resetEngine(duo1);
    for (let i = 0; i < 4; i++) expect(await ask('duo-b')).toBe(duo2);
    expect(await engineLog(duo1)).toEqual([]);
  });
});
