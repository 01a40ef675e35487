import { describe, expect, it } from 'vitest';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../src/core/contracts/upstream.ts';
import { probeAll, probeWorker } from '../../src/core/fleet/health-probe.ts';
import { FakeClock } from '../support/fake-clock.ts';

const encoder = new TextEncoder();

/** A streamed body; `state.done` tells whether the consumer read it to the end. */
function streamed(text: string): { body: ReadableStream<Uint8Array>; state: { done: boolean } } {
  const state = { done: false };
  const chunks = [text.slice(0, 3), text.slice(3)].map((c) => encoder.encode(c));
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift();
      if (next) controller.enqueue(next);
      else {
        state.done = true;
        controller.close();
      }
    },
  });
  return { body, state };
}

function respond(status: number, body: UpstreamResponse['body']): UpstreamResponse {
  return { status, headers: { 'content-type': 'application/json' }, body };
}

/** Answers each URL with a fixed status; records the requests it got. */
function fakeUpstream(statusByPath: Record<string, number>, bodyText = '{"status":"ok"}') {
  const calls: UpstreamRequest[] = [];
  const bodies: { done: boolean }[] = [];
  const upstream: Upstream = async (req) => {
    calls.push(req);
    const path = new URL(req.url).pathname;
    const { body, state } = streamed(path === '/v1/models' ? '{"data":[{"id":"m1"},{"id":"m2"}]}' : bodyText);
    bodies.push(state);
    return respond(statusByPath[path] ?? 404, body);
  };
  return { upstream, calls, bodies };
}

/** Never answers until the request is aborted, then rejects like fetch does. */
const hanging: Upstream = (req) =>
  new Promise((_, reject) => {
    req.signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')), {
      once: true,
    });
  });

const opts = (clock: FakeClock) => ({ endpoint: '/health', timeoutMs: 5000, clock });

describe('probeWorker', () => {
  it('200 → ok; GETs {url}{endpoint} with the api key, reads the body to the end, clears its timer', async () => {
    const clock = new FakeClock();
    const { upstream, calls, bodies } = fakeUpstream({ '/health': 200 });
    const r = await probeWorker(upstream, 'http://e1:8000/', { ...opts(clock), apiKey: 'sk-1' });
    expect(r).toEqual({ ok: true, status: 200 });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ url: 'http://e1:8000/health', method: 'GET', body: null });
    expect(calls[0]!.headers.authorization).toBe('Bearer sk-1');
    expect(bodies[0]!.done).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('503 → not ok, with the status and an error naming it', async () => {
    const clock = new FakeClock();
    const { upstream, bodies } = fakeUpstream({ '/health': 503 });
    const r = await probeWorker(upstream, 'http://e1:8000', opts(clock));
    expect(r).toEqual({ ok: false, status: 503, error: 'HTTP 503' });
    expect(bodies[0]!.done).toBe(true);
  });

  it('other 2xx are ok; 3xx and 4xx are not', async () => {
    const clock = new FakeClock();
    for (const [status, ok] of [
      [204, true],
      [299, true],
      [301, false],
      [404, false],
      [199, false],
    ] as const) {
      const { upstream } = fakeUpstream({ '/health': status });
      expect((await probeWorker(upstream, 'http://e1:8000', opts(clock))).ok, String(status)).toBe(ok);
    }
  });

  it('an engine that never answers fails when the injected clock fires the timeout (no sleeping)', async () => {
    const clock = new FakeClock();
    let settled = false;
    const pending = probeWorker(hanging, 'http://e1:8000', opts(clock)).finally(() => {
      settled = true;
    });
    await Promise.resolve();
    clock.advance(4999);
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    clock.advance(1);
    expect(await pending).toEqual({ ok: false, error: 'timeout after 5000 ms' });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a body that never ends is cancelled by the timeout', async () => {
    const clock = new FakeClock();
    let cancelled = false;
    const upstream: Upstream = async () =>
      respond(
        200,
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(encoder.encode('{"sta'));
          },
          cancel() {
            cancelled = true;
          },
        }),
      );
    const pending = probeWorker(upstream, 'http://e1:8000', opts(clock));
    await new Promise((r) => setImmediate(r));
    clock.advance(5000);
    expect(await pending).toEqual({ ok: false, error: 'timeout after 5000 ms' });
    expect(cancelled).toBe(true);
  });

  it('a transport error is a failed probe with its message, never a rejection', async () => {
    const clock = new FakeClock();
    const refused: Upstream = async () => {
      throw new TypeError('connect ECONNREFUSED 10.0.0.1:8000');
    };
    expect(await probeWorker(refused, 'http://e1:8000', opts(clock))).toEqual({
      ok: false,
      error: 'connect ECONNREFUSED 10.0.0.1:8000',
    });
    const throwsSync: Upstream = () => {
      throw new Error('bad url');
    };
    expect((await probeWorker(throwsSync, 'http://e1:8000', opts(clock))).error).toBe('bad url');
    expect(clock.pendingTimers).toBe(0);
  });

  it('a whole (buffered) body is accepted too', async () => {
    const clock = new FakeClock();
    const upstream: Upstream = async () => respond(200, encoder.encode('ok'));
    expect(await probeWorker(upstream, 'http://e1:8000', opts(clock))).toEqual({ ok: true, status: 200 });
  });

  it('models: true also reads /v1/models after a healthy probe', async () => {
    const clock = new FakeClock();
    const { upstream, calls } = fakeUpstream({ '/health': 200, '/v1/models': 200 });
    const r = await probeWorker(upstream, 'http://e1:8000', { ...opts(clock), models: true });
    expect(r).toEqual({ ok: true, status: 200, models: ['m1', 'm2'] });
    expect(calls.map((c) => c.url)).toEqual(['http://e1:8000/health', 'http://e1:8000/v1/models']);
    // an unhealthy worker is not asked for its models
    const down = fakeUpstream({ '/health': 503, '/v1/models': 200 });
    expect(await probeWorker(down.upstream, 'http://e1:8000', { ...opts(clock), models: true })).toEqual({
      ok: false,
      status: 503,
      error: 'HTTP 503',
    });
    expect(down.calls).toHaveLength(1);
  });

  it('with endpoint /v1/models the models come from the probe body itself (one request)', async () => {
    const clock = new FakeClock();
    const { upstream, calls } = fakeUpstream({ '/v1/models': 200 });
    const r = await probeWorker(upstream, 'http://e1:8000', {
      ...opts(clock),
      endpoint: '/v1/models',
      models: true,
    });
    expect(r).toEqual({ ok: true, status: 200, models: ['m1', 'm2'] });
    expect(calls).toHaveLength(1);
  });
});

describe('probeAll', () => {
  it('probes each distinct base URL once (DP ranks share one), concurrently, and maps url → result', async () => {
    const clock = new FakeClock();
    const started: string[] = [];
    const release: (() => void)[] = [];
    const upstream: Upstream = (req) => {
      started.push(req.url);
      const status = req.url.startsWith('http://bad') ? 503 : 200;
      return new Promise((resolve) => release.push(() => resolve(respond(status, null))));
    };
    const urls = ['http://a:8000', 'http://a:8000', 'http://bad:8000', 'http://c:8000', 'http://a:8000'];
    const pending = probeAll(upstream, urls, opts(clock));
    await new Promise((r) => setImmediate(r));
    // all three requests are in flight before any of them answered
    expect(started).toEqual(['http://a:8000/health', 'http://bad:8000/health', 'http://c:8000/health']);
    for (const r of release) r();
    const results = await pending;
    expect([...results.keys()]).toEqual(['http://a:8000', 'http://bad:8000', 'http://c:8000']);
    expect(results.get('http://a:8000')).toEqual({ ok: true, status: 200 });
    expect(results.get('http://bad:8000')).toEqual({ ok: false, status: 503, error: 'HTTP 503' });
  });

  it('one hanging engine times out without holding the others back', async () => {
    const clock = new FakeClock();
    const { upstream: ok } = fakeUpstream({ '/health': 200 });
    const mixed: Upstream = (req) => (req.url.startsWith('http://slow') ? hanging(req) : ok(req));
    const pending = probeAll(mixed, ['http://fast:1', 'http://slow:1'], opts(clock));
    await new Promise((r) => setImmediate(r));
    clock.advance(5000);
    const results = await pending;
    expect(results.get('http://fast:1')?.ok).toBe(true);
    expect(results.get('http://slow:1')).toEqual({ ok: false, error: 'timeout after 5000 ms' });
  });

  it('no URLs → empty map', async () => {
    expect((await probeAll(hanging, [], opts(new FakeClock()))).size).toBe(0);
  });
});
