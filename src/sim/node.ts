// Node runner of the simulated engine: serves engine.app with @hono/node-server on loopback and
// supplies the connection hooks a real failure needs (a TCP reset, a cut mid-response).
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type HttpBindings, serve } from '@hono/node-server';
import type { Context } from 'hono';
import { createSimEngine } from './engine.ts';
import type { SimEngine, SimOptions } from './types.ts';

export interface StartSimOptions extends Partial<SimOptions> {
  /** Listen address (default 127.0.0.1). */
  host?: string;
  /** Listen port (default 0: an ephemeral port). */
  port?: number;
  /**
   * Also serve the Mooncake bootstrap `/query` on its own listener (on `host`), as a real
   * Mooncake prefill engine does on port 8998: a port number (0: an ephemeral port). The engine's
   * HTTP port answers `/query` too.
   */
  bootstrapPort?: number;
}

export interface RunningSimEngine {
  url: string;
  port: number;
  engine: SimEngine;
  /** The separate bootstrap listener, when `bootstrapPort` was given. */
  bootstrap?: RunningBootstrap;
  /** Stops listening and closes idle and active connections (pending requests end at once). */
  close(): Promise<void>;
}

/** A listener serving only the Mooncake bootstrap `GET /query` of one engine. */
export interface RunningBootstrap {
  url: string;
  port: number;
  close(): Promise<void>;
}

function bindings(c: Context): HttpBindings {
  return c.env as HttpBindings;
}

/** Sends a TCP RST and drops the connection: the client sees ECONNRESET, no response. */
export function resetNodeConnection(c: Context): void {
  const socket = bindings(c).incoming.socket;
  if (socket.destroyed) return;
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}

/**
 * Ends the TCP connection after the bytes handed over so far are flushed, without finishing the
 * HTTP message (no terminating chunk, fewer bytes than content-length): the client sees a
 * premature close. If the headers are not written yet (@hono/node-server reads ahead before it
 * writes them), the cut waits until they and the first bytes are out.
 */
export function cutNodeConnection(c: Context): void {
  const outgoing = bindings(c).outgoing;
  const cut = () => {
    const socket = outgoing.socket ?? bindings(c).incoming.socket;
    if (!socket.destroyed) socket.destroySoon();
  };
  if (outgoing.headersSent) {
    cut();
    return;
  }
  const writeHead = outgoing.writeHead;
  outgoing.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    outgoing.writeHead = writeHead;
    const result = (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
    setImmediate(cut);
    return result;
  } as typeof writeHead;
}

/** Serves `fetch` on host:port; resolves once listening, with its URL and a close that cuts connections. */
async function listen(fetchFn: (req: Request) => Response | Promise<Response>, host: string, port: number) {
  const server = serve({ fetch: fetchFn, hostname: host, port }) as Server;
  // Outlive any proxy's keep-alive pool timeout, so pooled connections do not race our close.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 125_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    if (server.listening) {
      resolve();
      return;
    }
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.once('listening', () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** The bootstrap server's paths: `/query`, and the simulated KV pull of a decode engine (`/sim/kv/<id>`). */
const isBootstrapPath = (path: string) => path === '/query' || path.startsWith('/sim/kv/');

/**
 * Starts a listener that answers only the bootstrap paths for `engine` (`GET /query` with the same
 * answer, failures and probe log as the engine's own, and `GET /sim/kv/<id>`, where a simulated
 * Mooncake decode waits for this engine's transfer); anything else is a 404. A test can start it
 * after the engine, on a port chosen earlier, to play a bootstrap server that comes up late.
 */
export function startBootstrapServer(
  engine: SimEngine,
  options: { host?: string; port?: number } = {},
): Promise<RunningBootstrap> {
  const { host = '127.0.0.1', port = 0 } = options;
  return listen(
    (req) =>
      req.method === 'GET' && isBootstrapPath(new URL(req.url).pathname)
        ? engine.fetch(req)
        : new Response(JSON.stringify({ detail: 'Not Found' }), {
            status: 404,
            headers: { 'content-type': 'application/json' },
          }),
    host,
    port,
  );
}

export async function startSimEngine(options: StartSimOptions = {}): Promise<RunningSimEngine> {
  const { host = '127.0.0.1', port = 0, bootstrapPort, ...simOptions } = options;
  const engine = createSimEngine({
    resetConnection: resetNodeConnection,
    cutConnection: cutNodeConnection,
    ...simOptions,
  });
  const main = await listen(engine.app.fetch, host, port);
  let bootstrap: RunningBootstrap | undefined;
  try {
    if (bootstrapPort !== undefined)
      bootstrap = await startBootstrapServer(engine, { host, port: bootstrapPort });
  } catch (err) {
    await main.close();
    throw err;
  }
  return {
    url: main.url,
    port: main.port,
    engine,
    ...(bootstrap ? { bootstrap } : {}),
    async close() {
      await Promise.all([main.close(), bootstrap?.close()]);
    },
  };
}
