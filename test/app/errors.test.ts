/**
 * Failures of the core app, in memory: unreachable engines, no workers, broken and abandoned
 * streams, a hanging engine. Each test ends with every lease released exactly once.
 */
import { describe, expect, it } from 'vitest';
import { chatBody, checkLeasesAfterEach, type ErrorBody, sseData, stalled, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const TWO_ENGINES = '--worker-urls http://a.test http://b.test';
const decoder = new TextDecoder();

describe('errors (core app in memory)', () => {
  it('answers 502 upstream_unreachable when every engine refuses the connection', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    app.net.refuse('a.test');
    app.net.refuse('b.test');
    const res = await app.post(chatBody('Is anyone there?'));
    expect(res.status).toBe(502);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_unreachable');
    expect(res.headers.get('x-router-attempts')).toBe('5');
    const calls = app.inference();
    const last = calls.at(-1)!.split(' ')[0];
    expect(res.headers.get('x-routed-worker-id')).toBe(`http://${last}`); // the last one tried
    const body = (await res.json()) as ErrorBody;
    expect(body).toEqual({
      error: {
        message: expect.stringContaining('worker connection failed'),
        type: 'upstream_error',
        code: 'upstream_unreachable',
        param: null,
      },
    });
    // Both engines (each excluded once it refused) → backoff → both again → backoff → one more:
    // five attempts, the limit; a refused engine is rerouted at once within a round.
    expect(calls).toHaveLength(5);
    expect(calls.every((c) => c.endsWith(' refused'))).toBe(true);
    const hosts = calls.map((c) => c.split(' ')[0]);
    expect(hosts.slice(0, 2).sort()).toEqual(['a.test', 'b.test']);
    expect(hosts.slice(2, 4).sort()).toEqual(['a.test', 'b.test']);
    expect(app.backoffs()).toHaveLength(2);
    expect(app.engines['a.test']!.log).toHaveLength(0);
    expect(app.engines['b.test']!.log).toHaveLength(0);
  });

  it.each([
    ['no worker is configured', '', {}],
    [
      'every worker fails its health check',
      TWO_ENGINES,
      { 'a.test': { unhealthy: true }, 'b.test': { unhealthy: true } },
    ],
  ])('answers 503 no_available_workers when %s', async (_name, commandLine, engines) => {
    const app = await startApp(commandLine, engines);
    const probes = app.net.calls.length;
    const res = await app.post(chatBody('Hello?'));
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-error-code')).toBe('no_available_workers');
    // Retried in case a worker comes back, but no try reached an engine: no x-router-attempts.
    expect(res.headers.get('x-router-attempts')).toBeNull();
    expect(res.headers.get('x-routed-worker-id')).toBeNull();
    const body = (await res.json()) as ErrorBody;
    expect(body.error).toMatchObject({
      type: 'service_unavailable_error',
      code: 'no_available_workers',
      param: null,
    });
    expect(app.net.calls.length).toBe(probes); // no engine was sent the request
    expect(app.inference()).toEqual([]);
    expect(app.backoffs()).toHaveLength(4);
  });

  it('ends a stream cut mid-way with an upstream_stream_error event and no [DONE]', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { tokens: 6, failure: { mode: 'midstream', cutAfterChunks: 2 } },
      'b.test': { tokens: 6 },
    });
    const res = await app.post(chatBody('Tell me the whole timetable.', { stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    const text = await res.text();
    const events = sseData(text);
    expect(text).not.toContain('[DONE]');
    expect(events).toHaveLength(4); // role, 2 tokens, the error
    expect(JSON.parse(events.at(-1)!)).toEqual({
      error: {
        message: expect.stringContaining('upstream stream error'),
        type: 'upstream_stream_error',
        code: 'upstream_stream_error',
        param: null,
      },
    });
    expect(app.inference()).toEqual(['a.test 200']); // never retried once bytes went out
    expect(app.engines['a.test']!.log[0]).toMatchObject({ completed: false, tokensSent: 2 });
    expect(app.engines['b.test']!.log).toHaveLength(0);
    expect(await app.metric('vllm_router_stream_errors_total', 'http://a.test')).toBe(1);
  });

  it('cancels the engine’s stream and releases the lease when the client cancels the body mid-stream', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { tokens: 50, sleep: stalled },
      'b.test': { tokens: 50 },
    });
    const res = await app.post(chatBody('Read me every stop, slowly.', { stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(sseData(decoder.decode(first.value))).toHaveLength(2); // role + the first token
    expect(app.loads()).toEqual({ 'http://a.test': 1, 'http://b.test': 0 });

    await reader.cancel(); // what a server does with the body of a client that went away
    expect(app.loads()).toEqual({ 'http://a.test': 0, 'http://b.test': 0 });
    expect(app.engines['a.test']!.log[0]).toMatchObject({ completed: false, aborted: true, tokensSent: 1 });
    expect(app.inference()).toEqual(['a.test 200']);
  });

  it('cancels the engine’s stream and releases the lease when the client aborts the request mid-stream', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { tokens: 50, sleep: stalled },
      'b.test': { tokens: 50 },
    });
    const client = new AbortController();
    const res = await app.post(chatBody('Read me every stop, slowly.', { stream: true }), {
      signal: client.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    const reader = res.body!.getReader();
    await reader.read();
    const waiting = reader.read(); // the engine is still generating the next token
    expect(app.loads()).toEqual({ 'http://a.test': 1, 'http://b.test': 0 });

    client.abort();
    await waiting.catch(() => undefined);
    expect(app.loads()).toEqual({ 'http://a.test': 0, 'http://b.test': 0 });
    expect(app.engines['a.test']!.log[0]).toMatchObject({ completed: false, aborted: true, tokensSent: 1 });
    await reader.cancel();
  });

  it('answers 504 upstream_timeout when the engine hangs past --request-timeout-secs (fake clock)', async () => {
    const app = await startApp(`${TWO_ENGINES} --request-timeout-secs 30`, {
      'a.test': { failure: { mode: 'hang' } },
      'b.test': {},
    });
    const res = await app.post(chatBody('Hello?'));
    expect(res.status).toBe(504);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_timeout');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(((await res.json()) as ErrorBody).error).toMatchObject({
      type: 'upstream_error',
      code: 'upstream_timeout',
    });
    expect(app.inference()).toEqual(['a.test aborted']);
    expect(app.engines['a.test']!.log[0]).toMatchObject({ completed: false, aborted: true });
    expect(app.engines['b.test']!.log).toHaveLength(0);
    expect(app.backoffs()).toEqual([]);
  });
});
