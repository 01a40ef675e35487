/**
 * What the Node transport tells the core's body watch (engine-call.ts) over real loopback HTTP: a
 * small answer that arrives whole with its head is not watched at all (joining the core's idle list
 * would set and clear its timer per request); a body that does not come with its head is watched
 * from its head on, and again at each chunk, so a body gone silent is still cut at its idle limit.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createUndiciUpstream } from '../../../src/adapters/undici/upstream.ts';
import type { UpstreamResponse } from '../../../src/core/contracts/upstream.ts';

const upstream = createUndiciUpstream();
const servers: http.Server[] = [];

afterAll(async () => {
  await upstream.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function engine(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function call(url: string, watch: { calls: number }): Promise<UpstreamResponse> {
  return upstream({
    url: `${url}/v1/completions`,
    method: 'GET',
    headers: {},
    body: null,
    signal: new AbortController().signal,
    bodyWatch: { bodyProgress: () => void watch.calls++ },
  });
}

const ANSWER = JSON.stringify({ id: 'cmpl-1', choices: [{ text: 'hello' }] });

describe('the Node transport and the body watch', () => {
  it('answers that come whole with their head are not watched', async () => {
    const url = await engine((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length });
      res.end(ANSWER); // the head and the body in one write
    });
    const watch = { calls: 0 };
    for (let i = 0; i < 20; i++) {
      const res = await call(url, watch);
      expect(new TextDecoder().decode(res.body as Uint8Array)).toBe(ANSWER);
    }
    // Each whole answer used to be watched (20 calls); a read split by the kernel may still be.
    expect(watch.calls).toBeLessThan(5);
  });

  it('a body that lags its head is watched from the head on and at each chunk', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const url = await engine((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length });
      res.flushHeaders(); // the head alone
      void released.then(() => {
        res.write(ANSWER.slice(0, 10));
        setImmediate(() => res.end(ANSWER.slice(10)));
      });
    });
    const watch = { calls: 0 };
    const answer = call(url, watch);
    await expect.poll(() => watch.calls, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    release();
    const res = await answer;
    expect(new TextDecoder().decode(res.body as Uint8Array)).toBe(ANSWER);
    expect(watch.calls).toBeGreaterThanOrEqual(1);
  });
});
