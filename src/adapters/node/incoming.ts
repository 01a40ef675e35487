/** What the core reads of a request from Node's own request objects (@hono/node-server's bindings: `env.incoming`, `env.outgoing`). */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { InboundHooks } from '../../core/http/inbound.ts';
import type { ClientLink } from '../../core/routing/context.ts';

type Bindings = { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;

/** The peer's IP address. */
export function nodePeerAddress(env: unknown): string | undefined {
  return (env as Bindings)?.incoming?.socket?.remoteAddress;
}

/** The request's headers as Node parsed them (lower-case names): no `Headers` object is built. */
export function nodeRequestHeaders(env: unknown): IncomingHttpHeaders | undefined {
  return (env as Bindings)?.incoming?.headers;
}

/**
 * The client's connection as the exchange watches it: 'abort' once the response closes before it
 * finished (the client left, or its connection broke). Node's response object tells that itself,
 * so the core need not touch `c.req.raw.signal`, for which @hono/node-server makes an
 * AbortController per request. One `close` handler per response, added with the first listener:
 * removing a listener only takes it off the list, never off the response (a `once` and an `off` on
 * the response per request cost 3 % of a request's CPU: docs/benchmarks.md, round 24).
 */
export class ResponseLink implements ClientLink {
  /** The listeners to call (usually one: the exchange's). */
  private listeners: (() => void)[] = [];
  private watching = false;

  constructor(private readonly res: ServerResponse) {}

  get aborted(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.listeners.includes(listener)) return;
    this.listeners.push(listener);
    if (this.watching) return;
    this.watching = true;
    this.res.once('close', () => this.closed());
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  /** The response closed: each listener still on the list is told, once, if it had not finished. */
  private closed(): void {
    const listeners = this.listeners;
    this.listeners = [];
    if (this.res.writableFinished) return;
    for (const listener of listeners) listener();
  }
}

export function nodeClientLink(env: unknown): ClientLink | undefined {
  const res = (env as Bindings)?.outgoing;
  return res ? new ResponseLink(res) : undefined;
}

/** What the core reads from Node's request objects (`InboundHooks`): peer, raw headers, connection. */
export const nodeInboundHooks: InboundHooks = {
  peerAddress: nodePeerAddress,
  requestHeaders: nodeRequestHeaders,
  clientLink: nodeClientLink,
};
