/**
 * The Web `Request` as the inference handler reads it without Hono in front (Deno's JSON routes,
 * src/adapters/deno/direct.ts): the same view as through Hono's context, and the route match that
 * decides which requests take that way.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { honoInbound, type Inbound, jsonRouteOf, requestInbound } from '../../../src/core/http/inbound.ts';
import { JSON_INFERENCE_ROUTES } from '../../../src/core/http/inference.ts';

const ROUTES: ReadonlySet<string> = new Set(JSON_INFERENCE_ROUTES);

function chatRequest(body = '{"model":"m"}'): Request {
  return new Request('http://router.test:8000/v1/chat/completions?trace=1', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': 'abc', 'x-many': 'a' },
    body,
  });
}

async function view(inbound: Inbound) {
  return {
    method: inbound.method,
    url: inbound.url,
    target: inbound.target,
    type: inbound.header('content-type'),
    session: inbound.header('x-session-id'),
    missing: inbound.header('x-absent'),
    peer: inbound.peer,
    headers: [...(inbound.headerSource() as Headers)],
    body: new TextDecoder().decode(await inbound.bytes()),
  };
}

describe('requestInbound', () => {
  it('reads a request as the Hono route does', async () => {
    const app = new Hono();
    let throughHono: Awaited<ReturnType<typeof view>> | undefined;
    app.post('/v1/chat/completions', async (c) => {
      throughHono = await view(honoInbound(c, { peerAddress: () => '10.0.0.7' }));
      return c.text('ok');
    });
    await app.fetch(chatRequest());
    const direct = await view(requestInbound(chatRequest(), '10.0.0.7'));
    expect(direct).toEqual(throughHono);
    expect(direct.target).toBe('/v1/chat/completions?trace=1');
    expect(direct.missing).toBeUndefined();
  });

  it('watches the client through the request signal and hands the body over as a stream', async () => {
    const client = new AbortController();
    const req = new Request('http://router.test/v1/completions', {
      method: 'POST',
      body: 'x'.repeat(10),
      signal: client.signal,
    });
    const inbound = requestInbound(req, undefined);
    const link = inbound.client() as AbortSignal;
    expect(link.aborted).toBe(false);
    client.abort();
    expect(link.aborted).toBe(true);
    expect(await new Response(inbound.stream()).text()).toBe('x'.repeat(10));
  });
});

describe('jsonRouteOf', () => {
  it('names an exact JSON route of a POST, the query left aside', () => {
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h/v1/chat/completions')).toBe('/v1/chat/completions');
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h:1/v1/embeddings?x=1')).toBe('/v1/embeddings');
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h/generate')).toBe('/generate');
  });

  it('leaves everything else to the app: other methods, other or longer paths, a trailing slash', () => {
    expect(jsonRouteOf(ROUTES, 'GET', 'http://h/v1/chat/completions')).toBeUndefined();
    expect(jsonRouteOf(ROUTES, 'OPTIONS', 'http://h/v1/chat/completions')).toBeUndefined();
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h/v1/chat/completions/')).toBeUndefined();
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h/v1/audio/transcriptions')).toBeUndefined();
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h/v1/models')).toBeUndefined();
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h/')).toBeUndefined();
    expect(jsonRouteOf(ROUTES, 'POST', 'http://h')).toBeUndefined();
  });
});
