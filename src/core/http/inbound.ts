/**
 * A client request as the inference handlers read it, whatever delivered it: Hono's context (every
 * runtime), the runtime's Web `Request` without Hono in front (Deno's JSON inference routes,
 * src/adapters/deno/direct.ts) or the host's own request object (Node serves them without building
 * a Web `Request`, src/adapters/node/direct.ts). The handlers read headers by lower-case name, the
 * body once (whole, or as a stream), and watch the client's connection through `client`.
 */
import type { Context } from 'hono';
import type { ClientLink } from '../routing/context.ts';
import { type RawRequestHeaders, rawHeader } from '../routing/headers.ts';

export interface Inbound {
  readonly method: string;
  /** The URL as the runtime resolved it (scheme and host included): the forwarding headers' source. */
  readonly url: string;
  /** Path and query exactly as the client sent them. */
  readonly target: string;
  /** One request header by its lower-case name (repeated ones joined). */
  header(name: string): string | undefined;
  /** All request headers, for the upstream copy. */
  headerSource(): Headers | RawRequestHeaders;
  /** The connection's peer address, where the runtime tells it. */
  readonly peer: string | undefined;
  /** The client's connection: aborted once the client left. */
  client(): ClientLink;
  /** The whole body (the runtime holds a declared Content-Length to its word). */
  bytes(): Promise<Uint8Array>;
  /** The body as it arrives; null when there is none. */
  stream(): ReadableStream<Uint8Array> | null;
}

/**
 * What a runtime tells of a request beyond the Web `Request`, read from the bindings it serves the
 * request with (`env`: @hono/node-server's `{ incoming, outgoing }`, Deno's `ServeHandlerInfo`).
 */
export interface InboundHooks {
  /** The peer's IP address (Node, Deno); Workers do not know it. */
  peerAddress?: ((env: unknown) => string | undefined) | undefined;
  /**
   * The request's headers as a plain object with lower-case names, where the runtime holds them so
   * (Node: `IncomingMessage.headers`); without it the core reads the `Headers` object.
   */
  requestHeaders?: ((env: unknown) => RawRequestHeaders | undefined) | undefined;
  /** The client's connection, watched without an AbortSignal (Node: its response object). */
  clientLink?: ((env: unknown) => ClientLink | undefined) | undefined;
}

/** Path plus query of an absolute URL. */
export function targetOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  return slash < 0 ? '/' : url.slice(slash);
}

/** The request of a Hono context; the host's raw headers and connection are used where it has them. */
export function honoInbound(c: Context, hooks: InboundHooks): Inbound {
  const env: unknown = c.env;
  const raw = hooks.requestHeaders?.(env);
  return {
    method: c.req.method,
    url: c.req.url,
    target: targetOf(c.req.url),
    header: raw ? (name) => rawHeader(raw, name) : (name) => c.req.header(name),
    headerSource: () => raw ?? c.req.raw.headers,
    peer: hooks.peerAddress?.(env),
    client: () => hooks.clientLink?.(env) ?? c.req.raw.signal,
    bytes: async () => new Uint8Array(await c.req.arrayBuffer()),
    stream: () => c.req.raw.body,
  };
}

/**
 * A Web `Request` as the handlers read it, for a host that serves the JSON inference routes
 * without Hono in front (Deno): what `honoInbound` reads through the context, read from the
 * request itself.
 */
export function requestInbound(req: Request, peer: string | undefined): Inbound {
  return {
    method: req.method,
    url: req.url,
    target: targetOf(req.url),
    header: (name) => req.headers.get(name) ?? undefined,
    headerSource: () => req.headers,
    peer,
    client: () => req.signal,
    bytes: async () => new Uint8Array(await req.arrayBuffer()),
    stream: () => req.body,
  };
}

/** The JSON inference route a POST to `target` (path and query) names exactly, if any. */
export function jsonRouteOfTarget(
  routes: ReadonlySet<string>,
  method: string,
  target: string,
): string | undefined {
  if (method !== 'POST') return undefined;
  const query = target.indexOf('?');
  const path = query < 0 ? target : target.slice(0, query);
  return routes.has(path) ? path : undefined;
}

/** The JSON inference route a POST to `url` names exactly (path without its query), if any. */
export function jsonRouteOf(routes: ReadonlySet<string>, method: string, url: string): string | undefined {
  return jsonRouteOfTarget(routes, method, targetOf(url));
}
