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
}

export interface RunningSimEngine {
  url: string;
  port: number;
  engine: SimEngine;
  /** Stops listening and closes idle and active connections (pending requests end at once). */
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

export async function startSimEngine(options: StartSimOptions = {}): Promise<RunningSimEngine> {
  const { host = '127.0.0.1', port = 0, ...simOptions } = options;
  const engine = createSimEngine({
    resetConnection: resetNodeConnection,
    cutConnection: cutNodeConnection,
    ...simOptions,
  });
  const server = serve({ fetch: engine.app.fetch, hostname: host, port }) as Server;
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
    engine,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
