/** The proxy's header rules: what goes upstream (and the forwarding headers), what comes back. */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { parseRouterConfig } from '../../../src/core/config/schema.ts';
import { Admission } from '../../../src/core/http/admission.ts';
import { createInference, registerInferenceRoutes } from '../../../src/core/http/inference.ts';
import {
  clientResponseHeaders,
  plainAddress,
  upstreamRequestHeaders,
} from '../../../src/core/routing/headers.ts';
import { routedTo, scriptedFleet, statusUpstream, testContext } from './context.ts';

const URL_ = 'http://router.example:8080/v1/chat/completions?x=1';

describe('upstreamRequestHeaders', () => {
  it("drops the client's Cookie, Authorization and X-Data-Parallel-Rank, and hop-by-hop headers", () => {
    const out = upstreamRequestHeaders(
      new Headers({
        cookie: 'session=abc',
        authorization: 'Bearer client-token',
        'x-data-parallel-rank': '3',
        connection: 'keep-alive, x-hop',
        'x-hop': '1',
        'proxy-authorization': 'Basic abc',
        host: 'router.example:8080',
        'content-length': '12',
        'content-type': 'application/json',
        'x-session-id': 's1',
      }),
    );
    expect(out).toEqual({ 'content-type': 'application/json', 'x-session-id': 's1' });
  });

  it('appends the peer to X-Forwarded-For and Forwarded, and adds X-Forwarded-Proto/-Host', () => {
    const out = upstreamRequestHeaders(new Headers({ 'content-type': 'application/json' }), {
      peer: '10.1.2.3',
      url: URL_,
    });
    expect(out).toEqual({
      'content-type': 'application/json',
      'x-forwarded-for': '10.1.2.3',
      forwarded: 'for=10.1.2.3',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'router.example:8080',
    });
  });

  it('appends to what the client sent, and keeps its X-Forwarded-Proto and -Host', () => {
    const incoming = new Headers({
      'x-forwarded-for': '203.0.113.7, 198.51.100.2',
      forwarded: 'for=203.0.113.7;proto=https',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'api.example',
    });
    const out = upstreamRequestHeaders(incoming, { peer: '::ffff:10.1.2.3', url: URL_ });
    expect(out['x-forwarded-for']).toBe('203.0.113.7, 198.51.100.2, 10.1.2.3');
    expect(out.forwarded).toBe('for=203.0.113.7;proto=https, for=10.1.2.3');
    expect(out['x-forwarded-proto']).toBe('https');
    expect(out['x-forwarded-host']).toBe('api.example');
  });

  it('writes an IPv6 peer quoted and bracketed in Forwarded, plain in X-Forwarded-For', () => {
    const out = upstreamRequestHeaders(new Headers(), { peer: '2001:db8::1', url: 'http://[::1]:9/v1/x' });
    expect(out['x-forwarded-for']).toBe('2001:db8::1');
    expect(out.forwarded).toBe('for="[2001:db8::1]"');
    expect(out['x-forwarded-host']).toBe('[::1]:9');
  });

  it('leaves X-Forwarded-For and Forwarded as the client sent them when the peer is unknown', () => {
    const incoming = new Headers({ 'x-forwarded-for': '203.0.113.7' });
    const out = upstreamRequestHeaders(incoming, { peer: undefined, url: 'https://edge.example/v1/x' });
    expect(out['x-forwarded-for']).toBe('203.0.113.7');
    expect(out.forwarded).toBeUndefined();
    expect(out['x-forwarded-proto']).toBe('https');
    expect(out['x-forwarded-host']).toBe('edge.example');
  });

  it('treats an empty X-Forwarded-For as absent', () => {
    const out = upstreamRequestHeaders(new Headers({ 'x-forwarded-for': ' ' }), {
      peer: '10.0.0.1',
      url: URL_,
    });
    expect(out['x-forwarded-for']).toBe('10.0.0.1');
  });
});

describe('upstreamRequestHeaders from raw headers (Node)', () => {
  it('keeps and drops the same headers as from a Headers object', () => {
    const pairs: Record<string, string> = {
      cookie: 'session=abc',
      authorization: 'Bearer client-token',
      connection: 'keep-alive, x-hop',
      'x-hop': '1',
      host: 'router.example:8080',
      'content-length': '12',
      'content-type': 'application/json',
      'x-forwarded-for': '203.0.113.1',
      'x-session-id': 's1',
    };
    const from = { peer: '::ffff:10.1.2.3', url: URL_ };
    const raw = upstreamRequestHeaders({ ...pairs }, from);
    expect(raw).toEqual(upstreamRequestHeaders(new Headers(pairs), from));
    expect(raw['x-hop']).toBeUndefined();
    expect(raw['x-forwarded-for']).toBe('203.0.113.1, 10.1.2.3');
  });

  it('skips HTTP/2 pseudo-headers and joins repeated values', () => {
    const out = upstreamRequestHeaders({
      ':path': '/v1/x',
      ':authority': 'h',
      'x-a': ['1', '2'],
      'x-b': undefined,
    });
    expect(out).toEqual({ 'x-a': '1, 2' });
  });
});

describe('plainAddress', () => {
  it('unwraps IPv4-mapped IPv6 addresses only', () => {
    expect(plainAddress('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(plainAddress('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    expect(plainAddress('::ffff:abcd')).toBe('::ffff:abcd');
    expect(plainAddress('2001:db8::1')).toBe('2001:db8::1');
    expect(plainAddress('10.0.0.1')).toBe('10.0.0.1');
  });
});

describe('clientResponseHeaders', () => {
  it("drops the engine's Access-Control-* headers and hop-by-hop ones, keeps Vary and the rest", () => {
    const out = clientResponseHeaders({
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'x-secret',
      vary: 'origin',
      'transfer-encoding': 'chunked',
      'content-type': 'application/json',
      'set-cookie': ['a=1', 'b=2'],
    });
    expect(out).toEqual({ vary: 'origin', 'content-type': 'application/json', 'set-cookie': 'a=1\nb=2' });
  });
});

describe('inference routes', () => {
  it('answer OPTIONS themselves, even without the CORS middleware in front, and never forward it', async () => {
    const { upstream, calls } = statusUpstream([200]);
    const { ctx, clock } = testContext({ fleet: scriptedFleet([routedTo('a', 1)]).fleet, upstream });
    const app = new Hono();
    const admission = new Admission(undefined, 0, 1000, clock);
    registerInferenceRoutes(app, createInference(parseRouterConfig({}), ctx, admission), {
      peerAddress: () => '10.0.0.9',
    });
    const res = await app.request('/v1/files', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toContain('POST');
    expect(calls).toEqual([]);
    // Other methods on the same route do reach a worker, with the peer appended.
    const get = await app.request('/v1/files', { headers: { 'x-forwarded-for': '203.0.113.1' } });
    expect(get.status).toBe(200);
    expect(calls.map((c) => c.headers['x-forwarded-for'])).toEqual(['203.0.113.1, 10.0.0.9']);
  });

  it("read the host's raw headers when it gives them: request id, content type and what goes upstream", async () => {
    const { upstream, calls } = statusUpstream([200]);
    const { ctx, clock } = testContext({ fleet: scriptedFleet([routedTo('a', 1)]).fleet, upstream });
    const app = new Hono();
    const admission = new Admission(undefined, 0, 1000, clock);
    const raw = { 'x-request-id': 'from-raw', 'content-type': 'application/json', 'x-seen': 'raw' };
    registerInferenceRoutes(app, createInference(parseRouterConfig({}), ctx, admission), {
      requestHeaders: () => raw,
    });
    const res = await app.request('/v1/files', {
      method: 'POST',
      body: '{"model":"m"}',
      headers: { 'x-request-id': 'from-hono', 'content-type': 'text/plain', 'x-seen': 'hono' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('from-raw');
    expect(calls.map((c) => c.headers['x-seen'])).toEqual(['raw']);
  });
});
