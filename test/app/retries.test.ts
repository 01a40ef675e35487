/**
 * Retries of the core app, in memory, with the default cache_aware policy and conversations that
 * share a long system prompt. Backoffs run on the fake clock: no test waits for one in real time.
 */
import { describe, expect, it } from 'vitest';
import type { RouteInput } from '../../src/core/contracts/fleet-api.ts';
import { joinText } from '../../src/core/contracts/routing-text.ts';
import { chatBody, checkLeasesAfterEach, type ErrorBody, SYSTEM_PROMPT, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const TWO_ENGINES = '--worker-urls http://a.test http://b.test';
const fail503 = (first?: number) => ({ failure: { mode: 'status' as const, status: 503, first } });

/** `base` ms with the default ±20 % jitter. */
const jittered = (base: number) => [base * 0.8, base * 1.2] as const;

describe('retries (core app in memory)', () => {
  it('retries a 503 from engine A on engine B at once, with no backoff: 200 after 2 attempts', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': fail503(), 'b.test': {} });
    const res = await app.post(chatBody('When does the last train leave the Jungfraujoch?'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://b.test');
    expect(res.headers.get('x-sim-engine')).toBe('b.test');
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    expect(app.inference()).toEqual(['a.test 503', 'b.test 200']);
    expect(app.engines['a.test']!.log[0]?.completed).toBe(true); // the discarded 503 was read or cancelled
    expect(app.backoffs()).toEqual([]);
  });

  it('holds no routing text while an attempt runs, and a retry routes on the prompt again, read back from the body', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': fail503(), 'b.test': {} });
    const fleet = app.router.fleet;
    const route = fleet.route.bind(fleet);
    const decisions: { input: RouteInput; text: string | undefined }[] = [];
    fleet.route = (input: RouteInput) => {
      decisions.push({ input, text: input.text === undefined ? undefined : joinText(input.text) });
      return route(input);
    };
    const textDuringAttempt: unknown[] = [];
    for (const engine of Object.values(app.engines)) {
      const fetch = engine.fetch.bind(engine);
      engine.fetch = (req: Request) => {
        // The request's own input (a retry routes on a copy with the engines to avoid, dropped after).
        textDuringAttempt.push(decisions[0]?.input.text);
        return fetch(req);
      };
    }
    const res = await app.post(chatBody('Which platform for Grindelwald?'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    await res.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 503', 'b.test 200']);
    const expected = `system: ${SYSTEM_PROMPT}\nuser: Which platform for Grindelwald?\n`;
    expect(decisions.map((d) => d.text)).toEqual([expected, expected]);
    expect(textDuringAttempt).toEqual([undefined, undefined]);
  });

  it('with requests at once, streamed and not, each retry routes on its own prompt and none is held between decisions', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': fail503(), 'b.test': {} });
    const fleet = app.router.fleet;
    const route = fleet.route.bind(fleet);
    const texts: string[] = [];
    /** Each request's own input: the object of its first decision (retries route on copies). */
    const own = new Map<string, RouteInput>();
    fleet.route = (input: RouteInput) => {
      const text = input.text === undefined ? '' : joinText(input.text);
      texts.push(text);
      if (!own.has(text)) own.set(text, input);
      return route(input);
    };
    const heldDuringAttempt: number[] = [];
    for (const engine of Object.values(app.engines)) {
      const fetch = engine.fetch.bind(engine);
      engine.fetch = (req: Request) => {
        heldDuringAttempt.push([...own.values()].filter((i) => i.text !== undefined).length);
        return fetch(req);
      };
    }
    const questions = [
      'Grindelwald?',
      'Wengen?',
      'Mürren?',
      'Lauterbrunnen?',
      'Kleine Scheidegg?',
      'Eigergletscher?',
    ];
    const answers = await Promise.all(
      questions.map(async (q, i) => {
        const res = await app.post(chatBody(`Which platform for ${q}`, { stream: i % 2 === 0 }));
        const body = await res.text();
        return { status: res.status, attempts: Number(res.headers.get('x-router-attempts')), body };
      }),
    );
    for (const [i, q] of questions.entries()) {
      const a = answers[i]!;
      expect(a.status).toBe(200);
      if (i % 2 === 0) expect(a.body).toContain('data: [DONE]');
      const text = `system: ${SYSTEM_PROMPT}\nuser: Which platform for ${q}\n`;
      // Every decision of this request, first or retry, was made on its own prompt.
      expect(texts.filter((t) => t === text).length).toBe(a.attempts);
    }
    expect(texts.length).toBe(answers.reduce((n, a) => n + a.attempts, 0));
    expect(answers.some((a) => a.attempts === 2)).toBe(true);
    expect(heldDuringAttempt.length).toBe(texts.length);
    expect(heldDuringAttempt.every((n) => n === 0)).toBe(true);
  });

  it('moves the retry of a 503 off the cache-hot worker: affinity yields on a retry', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    const warm = await app.post(chatBody('Is there a train at dawn?'));
    expect(warm.headers.get('x-routed-worker-id')).toBe('http://a.test');
    await warm.arrayBuffer();

    app.engines['a.test']!.configure(fail503(1));
    const res = await app.post(chatBody('And one at dusk?'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://b.test');
    await res.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 200', 'a.test 503', 'b.test 200']);
    expect(app.backoffs()).toEqual([]);
  });

  it('absorbs 503, 503 from a single engine: 200 after 3 attempts, each backoff waited on the fake clock', async () => {
    const app = await startApp('--worker-urls http://a.test', { 'a.test': fail503(2) });
    let settled = false;
    const pending = app
      .post(chatBody('Can I bring my bicycle?'), { drive: false })
      .finally(() => (settled = true));

    const [first] = await app.waitForBackoffs(1);
    expect(first).toBeGreaterThanOrEqual(jittered(50)[0]);
    expect(first).toBeLessThanOrEqual(jittered(50)[1]);
    expect(app.inference()).toEqual(['a.test 503']);
    app.clock.advance(first! - 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(app.inference()).toEqual(['a.test 503']); // not a millisecond early
    app.clock.advance(1);

    const [, second] = await app.waitForBackoffs(2);
    expect(second).toBeGreaterThanOrEqual(jittered(75)[0]);
    expect(second).toBeLessThanOrEqual(jittered(75)[1]);
    expect(app.inference()).toEqual(['a.test 503', 'a.test 503']);
    expect(settled).toBe(false);
    app.clock.advance(second!);

    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('3');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    await res.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 503', 'a.test 503', 'a.test 200']);
    expect(await app.metric('vllm_router_retries_total')).toBe(2);
  });

  const engineSaysNo = JSON.stringify({
    error: { message: 'engine overloaded, come back later', type: 'ServiceUnavailableError', code: 503 },
  });
  it.each([
    ['a single attempt (--retry-max-retries 1)', '--retry-max-retries 1', 0],
    [
      'a spent budget (--retry-budget-ratio 0 --retry-budget-min-per-sec 0)',
      '--retry-budget-ratio 0 --retry-budget-min-per-sec 0',
      1,
    ],
  ])('with %s, passes the engine’s own 503 through unchanged', async (_name, flags, budgetExhausted) => {
    const app = await startApp(`${TWO_ENGINES} ${flags}`, {
      'a.test': { failure: { mode: 'status', status: 503, body: engineSaysNo } },
      'b.test': {},
    });
    const res = await app.post(chatBody('Is the summit open today?'));
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(res.headers.get('x-router-error-code')).toBeNull();
    expect(res.headers.get('x-sim-engine')).toBe('a.test');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.text()).toBe(engineSaysNo);
    expect(app.inference()).toEqual(['a.test 503']);
    expect(app.backoffs()).toEqual([]);
    expect(await app.metric('vllm_router_retries_budget_exhausted_total')).toBe(budgetExhausted);
    expect(await app.metric('vllm_router_retries_total')).toBe(0);
  });

  it('reroutes a refused connection on A to B at once, with no backoff', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    app.net.refuse('a.test'); // A went away after startup
    const res = await app.post(chatBody('Where do I change trains?'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://b.test');
    await res.arrayBuffer();
    expect(app.inference()).toEqual(['a.test refused', 'b.test 200']);
    expect(app.backoffs()).toEqual([]);
  });

  it('passes a 503 through when its Retry-After is longer than --retry-max-backoff-ms and no other engine exists', async () => {
    const app = await startApp('--worker-urls http://a.test --retry-max-backoff-ms 30000', {
      'a.test': { failure: { mode: 'status', status: 503, first: 1, retryAfter: '60' } },
    });
    const res = await app.post(chatBody('Will the line reopen this afternoon?'));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(res.headers.get('x-router-error-code')).toBeNull();
    expect(((await res.json()) as ErrorBody).error.message).toContain('simulated failure (503)');
    expect(app.inference()).toEqual(['a.test 503']);
    expect(app.backoffs()).toEqual([]);
  });

  it('with another engine, a long Retry-After does not block the retry: it goes there at once', async () => {
    const app = await startApp(`${TWO_ENGINES} --retry-max-backoff-ms 30000`, {
      'a.test': { failure: { mode: 'status', status: 503, first: 1, retryAfter: '60' } },
      'b.test': {},
    });
    const res = await app.post(chatBody('Will the line reopen this afternoon?'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-routed-worker-id')).toBe('http://b.test');
    await res.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 503', 'b.test 200']);
    expect(app.backoffs()).toEqual([]);
  });

  it('single engine: waits out a Retry-After within the cap on the fake clock, then retries', async () => {
    const app = await startApp('--worker-urls http://a.test', {
      'a.test': { failure: { mode: 'status', status: 429, first: 1, retryAfter: '2' } },
    });
    const res = await app.post(chatBody('How busy is the morning train?'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    await res.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 429', 'a.test 200']);
    expect(app.backoffs()).toEqual([2000]);
  });

  it('never retries a 400 from the engine', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { failure: { mode: 'status', status: 400 } },
      'b.test': {},
    });
    const res = await app.post(chatBody('What is the fare to Wengen?'));
    expect(res.status).toBe(400);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(res.headers.get('x-router-error-code')).toBeNull();
    const body = (await res.json()) as ErrorBody;
    expect(body.error.message).toBe('simulated failure (400)');
    expect(app.inference()).toEqual(['a.test 400']);
    expect(app.engines['b.test']!.log).toHaveLength(0);
    expect(app.backoffs()).toEqual([]);
  });
});
