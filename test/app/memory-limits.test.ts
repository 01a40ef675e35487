/**
 * Bounded memory under hostile input, in memory: the router-wide budget for buffered request
 * bodies (--max-buffered-bytes-total) and JSON nested too deep for anything to walk it. Nothing
 * refused here reaches an engine; each test ends with every lease released exactly once.
 */
import { describe, expect, it } from 'vitest';
import {
  type AppStack,
  chatBody,
  checkLeasesAfterEach,
  type ErrorBody,
  readChunks,
  startApp,
} from './app-stack.ts';

checkLeasesAfterEach();

const BUDGET = 1_000_000;
const ONE_ENGINE = `--worker-urls http://a.test --max-buffered-bytes-total ${BUDGET}`;
const encoder = new TextEncoder();

/** A chat request of about `bytes` bytes, with its length declared. */
function largeChat(
  bytes: number,
  question: string,
  stream = true,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(chatBody(`${question} ${'x'.repeat(bytes)}`, { stream }));
  return { body, headers: { 'content-length': String(encoder.encode(body).byteLength) } };
}

/** A request body the test feeds by hand (chunked: no declared length). */
function handFed() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
  });
  return {
    stream,
    push: (text: string) => controller.enqueue(encoder.encode(text)),
    end: () => controller.close(),
  };
}

async function settleTurns(n = 50): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function expectBudgetRefusal(res: Response): Promise<void> {
  expect(res.status).toBe(503);
  expect(res.headers.get('x-router-error-code')).toBe('buffer_budget_exceeded');
  expect(res.headers.get('retry-after')).toBe('1');
  const body = (await res.json()) as ErrorBody;
  expect(body.error).toMatchObject({
    type: 'service_unavailable_error',
    code: 'buffer_budget_exceeded',
    param: null,
  });
  expect(body.error.message).toContain('--max-buffered-bytes-total');
}

const buffered = (app: AppStack) => app.metric('vllm_router_buffered_request_bytes');

describe('the buffered-body budget (core app in memory)', () => {
  it('refuses concurrent large bodies over the budget with 503 + Retry-After, none reaching an engine', async () => {
    const app = await startApp(ONE_ENGINE, { 'a.test': {} });
    // Four concurrent 400 kB streaming chats against a 1 MB budget: two fit, two are refused.
    const reqs = [0, 1, 2, 3].map((i) => largeChat(400_000, `question ${i}`));
    const responses = await Promise.all(reqs.map((r) => app.post(r.body, { headers: r.headers })));
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(2);
    expect(refused).toHaveLength(2);
    for (const res of refused) await expectBudgetRefusal(res);
    expect(app.inference()).toEqual(['a.test 200', 'a.test 200']);
    // The two accepted bodies stay reserved while their answers stream (they are kept for retries).
    expect(await buffered(app)).toBe(Number(reqs[0]!.headers['content-length']) * 2);
    for (const res of ok) await readChunks(res);
    expect(await buffered(app)).toBe(0);
    // Freed: a refused request now goes through.
    const again = await app.post(reqs[2]!.body, { headers: reqs[2]!.headers });
    expect(again.status).toBe(200);
    await readChunks(again);
    expect(await buffered(app)).toBe(0);
    expect(await app.metric('vllm_router_request_errors_total', 'buffer_budget_exceeded')).toBe(2);
  });

  it('grows a chunked body reservation as it arrives and refuses the body that would cross the budget', async () => {
    const app = await startApp(ONE_ENGINE, { 'a.test': {} });
    const upload = handFed();
    const body = JSON.stringify(chatBody(`long upload ${'y'.repeat(700_000)}`));
    upload.push(body.slice(0, 650_000));
    const first = app.post(upload.stream);
    await settleTurns();
    expect(await buffered(app)).toBe(650_000);
    // A second chunked upload of 400 kB crosses the budget partway: refused, its reading stopped.
    const second = handFed();
    second.push(JSON.stringify(chatBody(`second ${'z'.repeat(400_000)}`)));
    second.end();
    await expectBudgetRefusal(await app.post(second.stream));
    // A declared length that does not fit is refused before any byte is read.
    const declared = largeChat(400_000, 'declared', false);
    await expectBudgetRefusal(await app.post(declared.body, { headers: declared.headers }));
    expect(app.inference()).toEqual([]);
    upload.push(body.slice(650_000));
    upload.end();
    const res = await first;
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(await buffered(app)).toBe(0);
    expect(app.inference()).toEqual(['a.test 200']);
  });

  it('lets a body larger than the whole budget through while it is alone, and returns it on a 400', async () => {
    const app = await startApp(ONE_ENGINE, { 'a.test': {} });
    const big = largeChat(1_500_000, 'bigger than the budget', false);
    const res = await app.post(big.body, { headers: big.headers });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(await buffered(app)).toBe(0);
    // Rejected after buffering (malformed JSON): the reservation is returned too.
    const broken = `${big.body.slice(0, -1)},`;
    const bad = await app.post(broken, { headers: { 'content-length': String(broken.length) } });
    expect(bad.status).toBe(400);
    await bad.arrayBuffer();
    expect(await buffered(app)).toBe(0);
  });
});

/** `{"model":…,"<field>":[[[…]]]}` nested `depth` arrays deep around `inner`. */
function nested(field: string, depth: number, inner = '1', extra = '"model":"sim-model"'): string {
  return `{${extra},"${field}":${'['.repeat(depth)}${inner}${']'.repeat(depth)}}`;
}

describe('deeply nested JSON (core app in memory)', () => {
  it('answers a 100k-deep prompt array with 400 invalid_request, never an engine call', async () => {
    const app = await startApp('--worker-urls http://a.test', { 'a.test': {} });
    const res = await app.post(nested('prompt', 100_000), { path: '/v1/completions' });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-router-error-code')).toBe('invalid_request');
    const body = (await res.json()) as ErrorBody;
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('levels deep');
    expect(app.inference()).toEqual([]);
    expect(await app.metric('vllm_router_requests_total', 'status="400"')).toBe(1);
  });

  it.each([
    [
      'cache_aware (the default), deep in a chat field routing does not read',
      '',
      '/v1/chat/completions',
      'metadata',
    ],
    [
      'round_robin (nothing walks the prompt for routing)',
      '--policy round_robin',
      '/v1/completions',
      'prompt',
    ],
  ])('rejects a 100k-deep body under %s', async (_name, flags, path, field) => {
    const app = await startApp(`--worker-urls http://a.test ${flags}`, { 'a.test': {} });
    const res = await app.post(nested(field, 100_000, '{}'), { path });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-router-error-code')).toBe('invalid_request');
    expect(app.inference()).toEqual([]);
  });

  it('routes legitimate nesting: a batch of token-id prompts and deep tool schemas', async () => {
    const app = await startApp('--worker-urls http://a.test', { 'a.test': {} });
    const batch = await app.post(
      {
        model: 'sim-model',
        prompt: [
          [1, 2, 3],
          [4, 5],
        ],
        max_tokens: 2,
      },
      { path: '/v1/completions' },
    );
    expect(batch.status).toBe(200);
    await batch.arrayBuffer();
    const schema = JSON.parse(nested('properties', 40, '{"type":"string"}', '"type":"object"')) as unknown;
    const tools = [{ type: 'function', function: { name: 'f', parameters: schema } }];
    const chat = await app.post(chatBody('use the tool', { tools }));
    expect(chat.status).toBe(200);
    await chat.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 200', 'a.test 200']);
  });
});
