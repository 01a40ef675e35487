/**
 * The floor of a Node router: the least a proxy in front of LLM engines can do per request.
 * Round robin over the upstreams, the request body read in full (a router must see it to route),
 * the upstream response streamed back chunk by chunk as it arrives (SSE-safe), a client that
 * leaves cancels the upstream request. No routing logic, no logging, no metrics.
 *
 *   tsx bench/floor-proxy.ts PORT URL[,URL...]     # prints "floor proxy listening on http://..."
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { HOP_BY_HOP } from './hop-by-hop.ts';

/** The headers of a request or a response, minus the hop-by-hop ones. */
function forwardable(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

function fail(res: http.ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: { message, type: 'proxy_error', code: status } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function startFloorProxy(port: number, upstreams: string[], host = '127.0.0.1') {
  const pools = upstreams.map(
    (url) => new Pool(url, { connections: 256, pipelining: 1, keepAliveTimeout: 60_000 }),
  );
  let next = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const pool = pools[next++ % pools.length] as Pool;
      const body = chunks.length === 1 ? chunks[0] : chunks.length === 0 ? null : Buffer.concat(chunks);
      const cancel = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) cancel.abort();
      });
      pool.request(
        {
          path: req.url ?? '/',
          method: req.method as 'POST',
          headers: forwardable(req.headers),
          body,
          signal: cancel.signal,
        },
        (err, answer) => {
          if (err || !answer) {
            fail(res, 502, `upstream error: ${err?.message ?? 'no answer'}`);
            return;
          }
          res.writeHead(answer.statusCode, forwardable(answer.headers));
          const upstream = answer.body;
          upstream.on('data', (chunk: Buffer) => {
            if (!res.write(chunk)) {
              upstream.pause();
              res.once('drain', () => upstream.resume());
            }
          });
          upstream.on('end', () => res.end());
          upstream.on('error', () => res.destroy());
        },
      );
    });
  });
  server.keepAliveTimeout = 60_000;

  return new Promise<{ url: string; close(): Promise<void> }>((resolve) => {
    server.listen(port, host, () => {
      const { port: bound } = server.address() as AddressInfo;
      resolve({
        url: `http://${host}:${bound}`,
        close: async () => {
          await new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          });
          await Promise.all(pools.map((p) => p.close()));
        },
      });
    });
  });
}

const isMain = process.argv[1]?.endsWith('floor-proxy.ts') || process.argv[1]?.endsWith('floor-proxy.js');
if (isMain) {
  const [portArg, urlsArg] = process.argv.slice(2);
  if (portArg === undefined || urlsArg === undefined) {
    process.stderr.write('usage: tsx bench/floor-proxy.ts PORT URL[,URL...]\n');
    process.exit(2);
  }
  const proxy = await startFloorProxy(Number(portArg), urlsArg.split(',').filter(Boolean));
  process.stdout.write(`floor proxy listening on ${proxy.url}\n`);
  const stop = () => void proxy.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
