/**
 * Engines that go silent, end to end: a started answer cut at its idle limit
 * (--stream-idle-timeout-secs for streams, --idle-timeout-secs for a body read whole after its
 * head), and long generations on a lone engine left alone. Real engines, the router over loopback
 * HTTP with the default cache_aware policy, clients on the OpenAI SDK sharing a long system prompt,
 * several at once. Time is the fake clock's: the test moves it past the limits, nothing sleeps.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeRouterOptions } from '../../src/adapters/node/server.ts';
import { fetchUpstream } from '../../src/core/upstream/fetch-upstream.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { engineRequests, metricSum, type Running, startStack } from '../support/harness.ts';

const SYSTEM = 'You are the avalanche bulletin assistant of an alpine valley. '.repeat(30);
const CLIENTS = 4;

let stack: Running | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

function clientOf(url: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** What one streaming client saw: its content chunks, and the error that ended the stream, if any. */
interface Seen {
  chunks: number;
  error?: unknown;
}

async function streamChat(client: OpenAI, question: string, seen: Seen): Promise<void> {
  try {
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      stream: true,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: question },
      ],
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) seen.chunks++;
  } catch (err) {
    seen.error = err;
  }
}

describe('a stream that goes silent is cut at its idle limit', () => {
  it('default flags: silent after two chunks, every stream ends with an error event at 300 s, not before', async () => {
    const clock = new FakeClock();
    stack = await startStack({
      engines: 2,
      engineOptions: { failure: { mode: 'stall', cutAfterChunks: 2 } },
      config: { policy: { name: 'cache_aware' }, log: { level: 'warn' } },
      router: { clock },
    });
    const client = clientOf(stack.router.url);
    const seen: Seen[] = Array.from({ length: CLIENTS }, () => ({ chunks: 0 }));
    const done = seen.map((s, i) => streamChat(client, `Is the pass above hut ${i} open today?`, s));
    await until(() => seen.every((s) => s.chunks === 2), 'two chunks on every stream');

    clock.advance(299_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.every((s) => s.error === undefined)).toBe(true);
    expect(engineRequests(stack.engines).every((r) => !r.aborted)).toBe(true);

    clock.advance(1_001);
    await until(() => seen.every((s) => s.error !== undefined), 'the cut on every stream');
    await Promise.all(done);
    for (const s of seen) {
      expect(s.chunks).toBe(2);
      expect(s.error).toBeInstanceOf(OpenAI.APIError);
      expect((s.error as InstanceType<typeof OpenAI.APIError>).type).toBe('upstream_stream_error');
    }
    // The log says why: the idle limit, once per stream.
    const cuts = stack.logs.filter((l) => l.includes('upstream stream broke'));
    expect(cuts).toHaveLength(CLIENTS);
    for (const l of cuts) expect(l).toContain('no data for 300000 ms');
    // Each engine request was cancelled by the router, never sent twice, and every lease came back.
    const router = stack.router;
    await until(
      () => engineRequests(stack?.engines ?? []).every((r) => r.aborted),
      'engine requests aborted',
    );
    expect(engineRequests(stack.engines)).toHaveLength(CLIENTS);
    expect(router.fleet.listWorkers().map((w) => w.load)).toEqual([0, 0]);
    expect(await metricSum(router.metricsUrl as string, 'vllm_router_stream_errors_total')).toBe(CLIENTS);
  });

  it('--stream-idle-timeout-secs 5: cut after 5 s of silence; 0 turns the limit off', async () => {
    const clock = new FakeClock();
    stack = await startStack({
      engines: 2,
      engineOptions: { failure: { mode: 'stall', cutAfterChunks: 1 } },
      config: {
        policy: { name: 'cache_aware' },
        log: { level: 'warn' },
        attempt: { streamIdleTimeoutSecs: 5 },
      },
      router: { clock },
    });
    const client = clientOf(stack.router.url);
    const seen: Seen = { chunks: 0 };
    const done = streamChat(client, 'Any new snow on the north slopes?', seen);
    await until(() => seen.chunks === 1, 'the first chunk');
    clock.advance(4_999);
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.error).toBeUndefined();
    clock.advance(1);
    await until(() => seen.error !== undefined, 'the cut');
    await done;
    expect((seen.error as InstanceType<typeof OpenAI.APIError>).type).toBe('upstream_stream_error');
    expect(stack.logs.filter((l) => l.includes('no data for 5000 ms'))).toHaveLength(1);
    await stack.stop();

    const off = new FakeClock();
    stack = await startStack({
      engines: 1,
      engineOptions: { failure: { mode: 'stall', cutAfterChunks: 1 } },
      config: {
        policy: { name: 'cache_aware' },
        log: { level: 'warn' },
        attempt: { streamIdleTimeoutSecs: 0 },
      },
      router: { clock: off },
    });
    const kept: Seen = { chunks: 0 };
    const keptDone = streamChat(clientOf(stack.router.url), 'Any new snow on the north slopes?', kept);
    await until(() => kept.chunks === 1, 'the first chunk');
    // Just short of the request deadline (--request-timeout-secs, 1,800 s): far past any idle limit.
    off.advance(1_799_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(kept.error).toBeUndefined();
    expect(engineRequests(stack.engines).every((r) => !r.aborted)).toBe(true);
    off.advance(1_000); // the deadline ends it
    await until(() => kept.error !== undefined, 'the deadline');
    await keptDone;
    expect(kept.error).toBeInstanceOf(OpenAI.APIError);
    expect(stack.logs.some((l) => l.includes('no data for'))).toBe(false);
  });
});

async function askChat(client: OpenAI, question: string, seen: Seen): Promise<void> {
  try {
    await client.chat.completions.create({
      model: 'sim-model',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: question },
      ],
    });
    seen.chunks++;
  } catch (err) {
    seen.error = err;
  }
}

/** Moves the fake clock a second at a time (real I/O between steps) until `done`; the seconds it took. */
async function secondsUntil(clock: FakeClock, done: () => boolean, maxSecs: number): Promise<number> {
  for (let s = 0; s < maxSecs; s++) {
    if (done()) return s;
    clock.advance(1000);
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1));
  }
  await until(done, 'the requests to settle');
  return maxSecs;
}

describe('a non-streamed answer whose body goes silent after its head is cut at its idle limit', () => {
  // undici reads such a body whole and reports each chunk; `fetch` (Workers) reads it with arrayBuffer.
  it.each<[string, Pick<NodeRouterOptions, 'upstream'>]>([
    ['undici', {}],
    ['fetch', { upstream: fetchUpstream() }],
  ])(
    '--idle-timeout-secs 5 (%s): several requests at once each get a 502 upstream_body_error at 5 s, never resent',
    async (_name, transport) => {
      const clock = new FakeClock();
      stack = await startStack({
        engines: 2,
        engineOptions: { failure: { mode: 'stall' } },
        config: { policy: { name: 'cache_aware' }, log: { level: 'warn' }, attempt: { idleTimeoutSecs: 5 } },
        router: { clock, ...transport },
      });
      const client = clientOf(stack.router.url);
      const seen: Seen[] = Array.from({ length: CLIENTS }, () => ({ chunks: 0 }));
      const done = seen.map((s, i) => askChat(client, `Which lifts run tomorrow from station ${i}?`, s));
      await until(() => engineRequests(stack?.engines ?? []).length === CLIENTS, 'the engine requests');
      await new Promise((r) => setTimeout(r, 50)); // the heads reach the router
      clock.advance(4_999);
      await new Promise((r) => setTimeout(r, 50));
      expect(seen.every((s) => s.error === undefined)).toBe(true);
      clock.advance(1);
      await until(() => seen.every((s) => s.error !== undefined), 'the cuts');
      await Promise.all(done);
      for (const s of seen) {
        const error = s.error as InstanceType<typeof OpenAI.APIError>;
        expect([error.status, error.code]).toEqual([502, 'upstream_body_error']);
      }
      await until(
        () => engineRequests(stack?.engines ?? []).every((r) => r.aborted),
        'engine requests aborted',
      );
      expect(engineRequests(stack.engines)).toHaveLength(CLIENTS);
      expect(stack.router.fleet.listWorkers().map((w) => w.load)).toEqual([0, 0]);
      expect(stack.logs.filter((l) => l.includes('no data for 5000 ms'))).toHaveLength(CLIENTS);
    },
  );

  it('default flags, a lone engine silent after its head: a 502 at 300 s, not the 1,800 s request deadline', async () => {
    // With one engine and one request, no stall check gives the attempt up (there is nothing to
    // compare the engine with): the idle limit is what ends it.
    const clock = new FakeClock();
    stack = await startStack({
      engines: 1,
      engineOptions: { failure: { mode: 'stall' } },
      config: { policy: { name: 'cache_aware' }, log: { level: 'warn' } },
      router: { clock },
    });
    const seen: Seen = { chunks: 0 };
    const done = askChat(clientOf(stack.router.url), 'Is the ridge trail safe?', seen);
    await until(() => engineRequests(stack?.engines ?? []).length === 1, 'the engine request');
    await new Promise((r) => setTimeout(r, 50));
    const secs = await secondsUntil(clock, () => seen.error !== undefined, 400);
    await done;
    expect(secs).toBe(300);
    const error = seen.error as InstanceType<typeof OpenAI.APIError>;
    expect([error.status, error.code]).toEqual([502, 'upstream_body_error']);
    await until(
      () => engineRequests(stack?.engines ?? []).every((r) => r.aborted),
      'the engine request aborted',
    );
    expect(engineRequests(stack.engines)).toHaveLength(1);
    expect(stack.router.fleet.listWorkers().map((w) => w.load)).toEqual([0]);
  });
});

describe('long generations on a lone engine', () => {
  it('two non-streamed answers that take longer than the stall threshold are not moved (no canary without another engine)', async () => {
    // The engine takes 1.5 s of real time; the router's clock is moved 40 s meanwhile, past the
    // 30 s non-streaming stall threshold. With a second engine one attempt would be moved there to
    // find out whether the fleet is alive; with none, moving it would only abort the engine's work
    // and send it straight back.
    const clock = new FakeClock();
    stack = await startStack({
      engines: 1,
      engineOptions: { ttftMs: 1500, itlMs: 0 },
      config: { policy: { name: 'cache_aware' }, log: { level: 'warn' } },
      router: { clock },
    });
    const client = clientOf(stack.router.url);
    const seen: Seen[] = [{ chunks: 0 }, { chunks: 0 }];
    const done = seen.map((s, i) => askChat(client, `Summarise the bulletin for sector ${i}.`, s));
    await until(() => engineRequests(stack?.engines ?? []).length === 2, 'the engine requests');
    for (let s = 0; s < 40; s++) {
      clock.advance(1000);
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all(done);
    expect(seen.map((s) => [s.chunks, s.error])).toEqual([
      [1, undefined],
      [1, undefined],
    ]);
    expect(engineRequests(stack.engines).map((r) => r.aborted)).toEqual([false, false]);
    expect(stack.logs.filter((l) => l.includes('attempt abandoned'))).toEqual([]);
  });
});
