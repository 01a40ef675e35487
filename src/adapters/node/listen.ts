/**
 * Node listeners: bind one with the error the command prints when it cannot (a port in use is a
 * one-line configuration error naming the flag, exit 2), apply the inbound keep-alive settings, and
 * close one gracefully (no new connections; idle keep-alive connections closed as they go idle).
 */

import { createServer, type RequestListener, type ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { type ListenProblem, type ListenTarget, listenError } from '../../core/cli.ts';
import type { Inference } from '../../core/http/inference.ts';
import { handleClientError } from './client-error.ts';
import { directListener } from './direct.ts';

export type NodeServer = ReturnType<typeof createAdaptorServer> & {
  closeAllConnections?: () => void;
  closeIdleConnections?: () => void;
  keepAliveTimeout?: number;
  headersTimeout?: number;
  requestTimeout?: number;
};

type FetchHandler = Parameters<typeof createAdaptorServer>[0]['fetch'];

function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** What a Node listen error means for the operator. */
export function listenProblem(err: unknown): ListenProblem {
  switch (errorCode(err)) {
    case 'EADDRINUSE':
      return 'in_use';
    case 'EACCES':
    case 'EPERM':
      return 'denied';
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'not_local';
    default:
      return 'other';
  }
}

/**
 * A server for `fetch`; requests node:http rejects before any handler get a short JSON answer. With
 * `direct`, the JSON inference routes are served without the app (direct.ts).
 */
export function createNodeServer(fetch: FetchHandler, hostname: string, direct?: Inference): NodeServer {
  const server = createAdaptorServer({
    fetch,
    hostname,
    ...(direct
      ? {
          createServer: ((options: ServerOptions, app: RequestListener) =>
            createServer(options, directListener(direct, app))) as typeof createServer,
        }
      : {}),
  }) as NodeServer;
  server.on('clientError', handleClientError);
  return server;
}

/**
 * Idle client connections close after `secs` (Node also advertises it as `Keep-Alive: timeout=N`).
 * The headers timeout stays above it: a connection reused just before the keep-alive timeout must
 * not be cut while its next request's headers arrive (Node counts that time from the request start).
 */
export function applyKeepAlive(server: NodeServer, secs: number): void {
  const ms = Math.round(secs * 1000);
  server.keepAliveTimeout = ms;
  server.headersTimeout = ms + 1000;
  const requestTimeout = server.requestTimeout ?? 0;
  if (requestTimeout > 0 && requestTimeout < server.headersTimeout)
    server.requestTimeout = server.headersTimeout;
}

/** Binds `server`; rejects with the command's configuration error (exit 2) when it cannot. */
export function listenOn(server: NodeServer, target: ListenTarget): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(listenError(target, listenProblem(err), err.message));
    server.once('error', onError);
    server.listen(target.port, target.host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * Stops accepting; resolves once every connection has ended (requests in flight finish first).
 * Keep-alive connections become idle as their last response ends: they are closed as they do.
 */
export function closeGracefully(server: NodeServer): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    const sweep = setInterval(() => server.closeIdleConnections?.(), 100);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections?.();
  });
}

/** Closes at once, cutting every connection (the metrics and health listeners: short requests). */
export function closeNow(server: NodeServer): Promise<void> {
  const closed = closeGracefully(server);
  server.closeAllConnections?.();
  return closed;
}

export function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
