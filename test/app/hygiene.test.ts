/**
 * Header and path hygiene of the core app, in memory: what the engines are sent (no client
 * credentials, cookies or DP rank; the forwarding headers), the router's own CORS policy (OPTIONS
 * never reaches an engine), request-id and session-id caps, and client-facing errors that carry no
 * transport detail. Each test ends with every lease released exactly once.
 */
import { describe, expect, it } from 'vitest';
import type { SimEngine } from '../../src/sim/engine.ts';
import {
  type AppStack,
  chatBody,
  checkLeasesAfterEach,
  type ErrorBody,
  sseData,
  startApp,
} from './app-stack.ts';

checkLeasesAfterEach();

const ONE = '--worker-urls http://a.test --policy round_robin';
const TWO_HASHED = '--worker-urls http://a.test http://b.test --policy consistent_hash';

/** The headers of the inference calls the engines were sent. */
function sentHeaders(app: AppStack): Record<string, string>[] {
  return app.net.calls.filter((c) => c.method === 'POST').map((c) => c.headers);
}

/** Wraps an engine so its answers carry CORS headers of its own. */
function withEngineCors(engine: SimEngine): void {
  const answer = engine.fetch.bind(engine);
  (engine as { fetch: SimEngine['fetch'] }).fetch = async (req) => {
    const res = await answer(req);
    const headers = new Headers(res.headers);
    headers.set('access-control-allow-origin', '*');
    headers.set('access-control-allow-credentials', 'true');
    headers.set('access-control-expose-headers', 'x-engine-secret');
    headers.set('vary', 'origin');
    return new Response(res.body, { status: res.status, headers });
  };
}

describe('headers sent upstream', () => {
  it("drops the client's Cookie, Authorization and X-Data-Parallel-Rank; appends the peer", async () => {
    const app = await startApp(ONE, { 'a.test': {} }, { peer: '::ffff:198.51.100.9' });
    const res = await app.post(chatBody('Which platform for Grindelwald?'), {
      headers: {
        cookie: 'session=secret-cookie',
        authorization: 'Bearer client-secret',
        'x-data-parallel-rank': '7',
        'x-forwarded-for': '203.0.113.5',
        forwarded: 'for=203.0.113.5',
        'x-custom': 'kept',
      },
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const [sent] = sentHeaders(app);
    expect(sent).toBeDefined();
    expect(sent!.cookie).toBeUndefined();
    expect(sent!.authorization).toBeUndefined();
    expect(sent!['x-data-parallel-rank']).toBeUndefined();
    expect(sent!['x-custom']).toBe('kept');
    expect(sent!['x-forwarded-for']).toBe('203.0.113.5, 198.51.100.9');
    expect(sent!.forwarded).toBe('for=203.0.113.5, for=198.51.100.9');
    expect(sent!['x-forwarded-proto']).toBe('http');
    expect(sent!['x-forwarded-host']).toBe('localhost');
  });

  it('sends --api-key as the bearer instead of the client token, and its own DP rank', async () => {
    const app = await startApp(`${ONE} --api-key engine-key --intra-node-data-parallel-size 2`, {
      'a.test': {},
    });
    for (let i = 0; i < 2; i++) {
      const res = await app.post(chatBody(`Question ${i}`), {
        headers: { authorization: 'Bearer client-secret', 'x-data-parallel-rank': '9' },
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const sent = sentHeaders(app);
    expect(sent.map((h) => h.authorization)).toEqual(['Bearer engine-key', 'Bearer engine-key']);
    expect(sent.map((h) => h['x-data-parallel-rank']).sort()).toEqual(['0', '1']);
  });

  it('writes an IPv6 peer bracketed and quoted in Forwarded', async () => {
    const app = await startApp(ONE, { 'a.test': {} }, { peer: '2001:db8::7' });
    const res = await app.post(chatBody('Hi'));
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const [sent] = sentHeaders(app);
    expect(sent!['x-forwarded-for']).toBe('2001:db8::7');
    expect(sent!.forwarded).toBe('for="[2001:db8::7]"');
  });

  it('leaves X-Forwarded-For as the client sent it when the host does not know the peer', async () => {
    const app = await startApp(ONE, { 'a.test': {} }, { peer: '' });
    const res = await app.post(chatBody('Hi'), { headers: { 'x-forwarded-for': '203.0.113.5' } });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const [sent] = sentHeaders(app);
    expect(sent!['x-forwarded-for']).toBe('203.0.113.5');
    expect(sent!.forwarded).toBeUndefined();
  });
});

describe("the router's CORS policy", () => {
  const preflight = (origin = 'https://app.example') => ({
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  });

  it('answers preflights itself without configured origins (204, no Allow-Origin), never an engine', async () => {
    const app = await startApp(ONE, { 'a.test': {} });
    const before = app.net.calls.length;
    for (const path of ['/v1/chat/completions', '/v1/files', '/v1/audio/transcriptions', '/workers']) {
      const res = await app.request(path, preflight());
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
    }
    const plain = await app.request('/v1/files', { method: 'OPTIONS' });
    expect(plain.status).toBe(204);
    expect(plain.headers.get('allow')).toContain('POST');
    expect(app.net.calls.length).toBe(before);
  });

  it('with --cors-allowed-origins: allows those origins only, Authorization and Content-Type', async () => {
    const app = await startApp(`${ONE} --cors-allowed-origins https://app.example`, { 'a.test': {} });
    const before = app.net.calls.length;
    const ok = await app.request('/v1/chat/completions', preflight());
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(ok.headers.get('access-control-allow-headers')?.toLowerCase()).toBe('authorization,content-type');
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    const other = await app.request('/v1/files', preflight('https://evil.example'));
    expect(other.status).toBe(204);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(app.net.calls.length).toBe(before); // no preflight reached an engine
  });

  it("replaces the engine's CORS headers with the router's on proxied answers", async () => {
    const app = await startApp(`${ONE} --cors-allowed-origins https://app.example`, { 'a.test': {} });
    withEngineCors(app.engines['a.test']!);
    const allowed = await app.post(chatBody('Hi'), { headers: { origin: 'https://app.example' } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(allowed.headers.get('access-control-expose-headers')?.toLowerCase()).toBe('x-request-id');
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();
    await allowed.arrayBuffer();
    const other = await app.post(chatBody('Hi'), { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    await other.arrayBuffer();
  });

  it("drops the engine's CORS headers when no origin is configured", async () => {
    const app = await startApp(ONE, { 'a.test': {} });
    withEngineCors(app.engines['a.test']!);
    const res = await app.post(chatBody('Hi'), { headers: { origin: 'https://evil.example' } });
    expect(res.status).toBe(200);
    for (const [name] of res.headers) expect(name.startsWith('access-control-'), name).toBe(false);
    expect(res.headers.get('vary')?.toLowerCase()).toContain('origin');
    await res.arrayBuffer();
  });
});

describe('caps on client-supplied ids', () => {
  it.each([
    ['longer than 256 bytes', 'r'.repeat(257)],
    ['with a space', 'id with space'],
    ['with a control character', 'id\u0001x'],
    ['with non-ASCII', 'caf\u00e9'],
  ])('replaces an x-request-id %s by a fresh one (never echoed nor forwarded)', async (_name, id) => {
    const app = await startApp(ONE, { 'a.test': {} });
    const res = await app.post(chatBody('Hi'), { headers: { 'x-request-id': id } });
    expect(res.status).toBe(200);
    const echoed = res.headers.get('x-request-id');
    expect(echoed).toBeTruthy();
    expect(echoed).not.toBe(id);
    expect(sentHeaders(app)[0]!['x-request-id']).toBe(echoed);
    await res.arrayBuffer();
  });

  it('keeps an acceptable x-request-id of 256 bytes', async () => {
    const app = await startApp(ONE, { 'a.test': {} });
    const id = `req-${'x'.repeat(252)}`;
    const res = await app.post(chatBody('Hi'), { headers: { 'x-request-id': id } });
    expect(res.headers.get('x-request-id')).toBe(id);
    expect(sentHeaders(app)[0]!['x-request-id']).toBe(id);
    await res.arrayBuffer();
  });

  /** The workers the questions went to, all with the same session id. */
  async function workersFor(app: AppStack, session: { header?: string; user?: string }): Promise<string[]> {
    const workers: string[] = [];
    for (let i = 0; i < 8; i++) {
      const extra = session.user === undefined ? {} : { user: session.user };
      const headers: Record<string, string> = session.header ? { 'x-session-id': session.header } : {};
      const res = await app.post(chatBody(`Question number ${i} about trains`, extra), { headers });
      expect(res.status).toBe(200);
      workers.push(res.headers.get('x-routed-worker-id') ?? '');
      await res.arrayBuffer();
    }
    return workers;
  }

  it('consistent_hash keeps a session on one worker while its id is within the limit', async () => {
    const app = await startApp(TWO_HASHED, { 'a.test': {}, 'b.test': {} });
    expect(new Set(await workersFor(app, { header: 's'.repeat(256) })).size).toBe(1);
  });

  it('consistent_hash ignores session ids over --sll-max-session-id-bytes (no affinity, no echo)', async () => {
    const app = await startApp(TWO_HASHED, { 'a.test': {}, 'b.test': {} });
    const long = 's'.repeat(257);
    const byHeader = await workersFor(app, { header: long });
    expect(new Set(byHeader).size).toBe(2); // routed by each question's text instead
    // UTF-8 bytes count, not characters: 129 × "é" is 258 bytes.
    const byBody = await workersFor(app, { user: '\u00e9'.repeat(129) });
    expect(new Set(byBody).size).toBe(2);
    expect(app.logs.join('\n')).not.toContain(long);
  });

  it('/finish_session refuses a session id over the limit without echoing it', async () => {
    const app = await startApp(ONE, { 'a.test': {} });
    const long = 's'.repeat(300);
    const res = await app.request(`/finish_session?session_id=${long}`, { method: 'POST' });
    expect(res.status).toBe(400);
    expect(await res.text()).not.toContain(long);
    const ok = await app.request('/finish_session?session_id=alice', { method: 'POST' });
    expect(ok.status).toBe(200);
  });

  it('a lower --sll-max-session-id-bytes applies to consistent_hash too', async () => {
    const app = await startApp(`${TWO_HASHED} --sll-max-session-id-bytes 8`, { 'a.test': {}, 'b.test': {} });
    expect(new Set(await workersFor(app, { header: 'sess-123' })).size).toBe(1);
    expect(new Set(await workersFor(app, { header: 'sess-1234' })).size).toBe(2);
  });
});

describe('client-facing errors carry no transport detail', () => {
  const TRANSPORT = /ECONN|UND_ERR|fetch failed|socket|other side closed|\n\s+at /i;

  it('a refused connection: "worker connection failed" with the request id; the detail in the log', async () => {
    const app = await startApp(`${ONE} --retry-max-retries 1`, { 'a.test': {} });
    app.net.refuse('a.test');
    const res = await app.post(chatBody('Hi'), { headers: { 'x-request-id': 'req-refused-1' } });
    expect(res.status).toBe(502);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe('upstream_unreachable');
    expect(body.error.message).toBe('worker connection failed (request id req-refused-1)');
    expect(body.error.message).not.toMatch(TRANSPORT);
    const line = app.logs.find((l) => l.includes('req-refused-1') && l.includes('ECONNREFUSED'));
    expect(line, app.logs.join('\n')).toBeDefined();
  });

  it('an engine that resets the connection: the same generic message', async () => {
    const app = await startApp(`${ONE} --retry-max-retries 1`, { 'a.test': { failure: { mode: 'reset' } } });
    const res = await app.post(chatBody('Hi'), { headers: { 'x-request-id': 'req-reset-1' } });
    expect(res.status).toBe(502);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.message).toBe('worker connection failed (request id req-reset-1)');
    expect(app.logs.some((l) => l.includes('req-reset-1') && /ECONNRESET|reset/i.test(l))).toBe(true);
  });

  it('router-originated engine calls (/health_generate) carry no transport detail either', async () => {
    const app = await startApp(ONE, { 'a.test': {} });
    app.net.refuse('a.test');
    const res = await app.request('/health_generate');
    expect(res.status).toBe(502);
    const body = (await res.json()) as ErrorBody;
    expect(body.error).toMatchObject({ code: 'upstream_unreachable', message: 'worker connection failed' });
  });

  it('a stream cut mid-way: an SSE error event "upstream stream error" with the request id', async () => {
    const app = await startApp(ONE, {
      'a.test': { tokens: 6, failure: { mode: 'midstream', cutAfterChunks: 2 } },
    });
    const res = await app.post(chatBody('Tell me the timetable.', { stream: true }), {
      headers: { 'x-request-id': 'req-cut-1' },
    });
    expect(res.status).toBe(200);
    const events = sseData(await res.text());
    const last = JSON.parse(events.at(-1)!) as ErrorBody;
    expect(last.error.message).toBe('upstream stream error (request id req-cut-1)');
    expect(last.error.message).not.toMatch(TRANSPORT);
    expect(app.logs.some((l) => l.includes('upstream stream broke') && l.includes('req-cut-1'))).toBe(true);
  });
});
