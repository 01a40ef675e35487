/**
 * How the Node adapter tells the core that a client left (src/adapters/node/incoming.ts): over a
 * real connection, a listener hears 'abort' once when the client goes before its answer is
 * finished, never after a finished answer, never once removed; and the response carries one
 * `close` handler however often listeners come and go.
 */
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseLink } from '../../../src/adapters/node/incoming.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server that hands each response to `handle`, and a client request to it (not ended yet). */
async function exchange(handle: (res: ServerResponse) => void) {
  const server = createServer((_req, res) => handle(res));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' });
  req.on('error', () => {});
  return req;
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
};

describe('ResponseLink', () => {
  it('tells each listener once when the client leaves before the answer is finished', async () => {
    const heard: string[] = [];
    let link: ResponseLink | undefined;
    const req = await exchange((res) => {
      link = new ResponseLink(res);
      const a = () => heard.push('a');
      link.addEventListener('abort', a);
      link.addEventListener('abort', a); // the same listener twice: told once
      link.addEventListener('abort', () => heard.push('b'));
      res.write('partial'); // the answer has begun, not finished
    });
    req.write('{}');
    req.on('response', () => req.destroy());
    // The watch tells its listeners in one go, so a third call would be in by now.
    await until(() => heard.length >= 2);
    expect(heard).toEqual(['a', 'b']);
    expect(link?.aborted).toBe(true);
  });

  it('does not tell a removed listener, nor anyone once the answer was finished', async () => {
    const heard: string[] = [];
    let closed = false;
    const req = await exchange((res) => {
      const link = new ResponseLink(res);
      const gone = () => heard.push('removed');
      link.addEventListener('abort', gone);
      link.removeEventListener('abort', gone);
      link.addEventListener('abort', () => heard.push('kept'));
      res.on('close', () => {
        closed = true;
      });
      res.write('partial');
    });
    req.write('{}');
    req.on('response', () => req.destroy());
    await until(() => closed);
    expect(heard).toEqual(['kept']);

    heard.length = 0;
    closed = false;
    const finished = await exchange((res) => {
      const link = new ResponseLink(res);
      link.addEventListener('abort', () => heard.push('finished'));
      res.on('close', () => {
        closed = true;
      });
      res.end('done');
    });
    finished.end('{}');
    await until(() => closed);
    expect(heard).toEqual([]);
  });

  it('puts one close handler on the response however often listeners come and go', async () => {
    const counts: number[] = [];
    const req = await exchange((res) => {
      const base = res.listenerCount('close');
      const link = new ResponseLink(res);
      for (let i = 0; i < 20; i++) {
        const listener = () => {};
        link.addEventListener('abort', listener);
        link.removeEventListener('abort', listener);
        counts.push(res.listenerCount('close') - base);
      }
      res.end('done');
    });
    req.end('{}');
    await until(() => counts.length === 20);
    expect(new Set(counts)).toEqual(new Set([1]));
  });
});
