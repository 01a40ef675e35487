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
  /** The listeners and their `close` handlers, side by side (usually one: the exchange's). */
  private readonly listeners: (() => void)[] = [];
  private readonly handlers: (() => void)[] = [];

  constructor(private readonly res: ServerResponse) {}

  get aborted(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.listeners.includes(listener)) return;
    const onClose = () => {
      this.forget(listener);
      if (!this.res.writableFinished) listener();
    };
    this.listeners.push(listener);
    this.handlers.push(onClose);
    this.res.once('close', onClose);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const onClose = this.forget(listener);
    if (onClose) this.res.off('close', onClose);
  }

  private forget(listener: () => void): (() => void) | undefined {
    const i = this.listeners.indexOf(listener);
    if (i < 0) return undefined;
    const [onClose] = this.handlers.splice(i, 1);
    this.listeners.splice(i, 1);
    return onClose;
  }
}

export function nodeClientLink(c: Context): ClientLink | undefined {
  const res = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  return res ? new ResponseLink(res) : undefined;
}
