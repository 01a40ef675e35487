/** The policies through the whole request path: routing text and keys reach them from real requests. */
import { afterEach, describe, expect, it } from 'vitest';
import { type Running, startStack } from '../support/harness.ts';

type Body = Record<string, unknown>;

describe('policies over loopback', () => {
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  const send = async (body: Body, headers: Record<string, string> = {}) => {
    const res = await fetch(`${stack!.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'sim-model', max_tokens: 2, ...body }),
    });
    await res.arrayBuffer();
    return res;
  };
  const chat = (content: string) => ({ messages: [{ role: 'user', content }] });

  it('consistent_hash pins a session header to one worker and spreads other sessions', async () => {
    stack = await startStack({ engines: 3, config: { policy: { name: 'consistent_hash' } } });
    const pinned = new Set<string | null>();
    for (let i = 0; i < 12; i++) {
      pinned.add(
        (await send(chat(`turn ${i}`), { 'x-session-id': 'user-a' })).headers.get('x-routed-worker-id'),
      );
    }
    expect(pinned.size).toBe(1);
    const spread = new Set<string | null>();
    for (let i = 0; i < 30; i++) {
      spread.add((await send(chat('x'), { 'x-session-id': `user-${i}` })).headers.get('x-routed-worker-id'));
    }
    expect(spread.size).toBeGreaterThan(1);
  });

  it('production-stack --routing-logic session --session-key reads that header', async () => {
    stack = await startStack({
      engines: 3,
      config: { policy: { name: 'consistent_hash', sessionKey: 'x-user' } },
    });
    const seen = new Set<string | null>();
    for (let i = 0; i < 10; i++)
      seen.add((await send(chat(`t${i}`), { 'x-user': 'alice' })).headers.get('x-routed-worker-id'));
    expect(seen.size).toBe(1);
  });

  it('cache_aware sends a repeated long prompt back to the engine that has it cached', async () => {
    stack = await startStack({ engines: 3, config: { policy: { name: 'cache_aware' } } });
    const prompt = `You are a careful assistant. ${'Context paragraph. '.repeat(60)}`;
    const first = (await send(chat(prompt))).headers.get('x-routed-worker-id');
    for (let i = 0; i < 8; i++) {
      const res = await send({
        messages: [
          { role: 'user', content: prompt },
          { role: 'user', content: `q${i}` },
        ],
      });
      expect(res.headers.get('x-routed-worker-id')).toBe(first);
    }
  });

  it('sticky_least_loaded keeps a body `user` on its worker until /finish_session', async () => {
    stack = await startStack({ engines: 2, config: { policy: { name: 'sticky_least_loaded' } } });
    const url = stack.router.url;
    /** The session gauges of one worker (a worker without sessions has no series: 0). */
    const sessionsOn = async (worker: string) => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const value = (name: string) => {
        const line = text.split('\n').find((l) => l.startsWith(`${name}{worker="${worker}"} `));
        return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
      };
      return {
        pinned: value('vllm_router_sll_pinned_sessions'),
        active: value('vllm_router_sll_active_sessions'),
      };
    };
    const first = (await send({ ...chat('a'), user: 'bob' })).headers.get('x-routed-worker-id') as string;
    expect(stack.engines.map((e) => e.url)).toContain(first);
    for (let i = 0; i < 5; i++) {
      expect((await send({ ...chat(`b${i}`), user: 'bob' })).headers.get('x-routed-worker-id')).toBe(first);
    }
    expect(await sessionsOn(first)).toEqual({ pinned: 1, active: 1 });

    const finished = await fetch(`${url}/finish_session?session_id=bob`, { method: 'POST' });
    expect(finished.status).toBe(200);
    expect(await finished.json()).toEqual({ session_id: 'bob', finished: true });
    // Released: bob no longer counts on its worker.
    expect(await sessionsOn(first)).toEqual({ pinned: 0, active: 0 });
    const again = await fetch(`${url}/finish_session?session_id=bob`, { method: 'POST' });
    expect(again.status).toBe(200); // idempotent
    expect(await sessionsOn(first)).toEqual({ pinned: 0, active: 0 });

    // bob's next request is placed afresh (one pinned session again, wherever it went).
    const placed = (await send({ ...chat('c'), user: 'bob' })).headers.get('x-routed-worker-id') as string;
    expect(await sessionsOn(placed)).toEqual({ pinned: 1, active: 1 });
  });

  it('least_loaded refuses a request without a session id with a clear 503', async () => {
    stack = await startStack({ engines: 2, config: { policy: { name: 'least_loaded' } } });
    const res = await send(chat('no session'));
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-error-code')).toBe('session_required');
    const ok = await send(chat('with session'), { 'x-session-id': 's1' });
    expect(ok.status).toBe(200);
  });
});
