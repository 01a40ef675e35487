/** What the core reads of a request from Node's own request object (@hono/node-server: c.env.incoming). */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'hono';
import type { ClientLink } from '../../core/routing/context.ts';

/** The peer's IP address. */
export function nodePeerAddress(c: Context): string | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
}

/** The request's headers as Node parsed them (lower-case names): no `Headers` object is built. */
export function nodeRequestHeaders(c: Context): IncomingHttpHeaders | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.headers;
}

/**
 * The client's connection as the exchange watches it: 'abort' once the response closes before it
 * finished (the client left, or its connection broke). Node's response object tells that itself,
 * so the core need not touch `c.req.raw.signal`, for which @hono/node-server makes an
 * AbortController per request.
 */
export class ResponseLink implements ClientLink {
  private readonly listeners = new Map<() => void, () => void>();

  constructor(private readonly res: ServerResponse) {}

  get aborted(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.listeners.has(listener)) return;
    const onClose = () => {
      this.listeners.delete(listener);
      if (!this.res.writableFinished) listener();
    };
    this.listeners.set(listener, onClose);
    this.res.once('close', onClose);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const onClose = this.listeners.get(listener);
    if (!onClose) return;
    this.listeners.delete(listener);
    this.res.off('close', onClose);
  }
}

export function nodeClientLink(c: Context): ClientLink | undefined {
  const res = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  return res ? new ResponseLink(res) : undefined;
}
