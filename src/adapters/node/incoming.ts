/** What the core reads of a request from Node's own request objects (@hono/node-server's bindings: `env.incoming`, `env.outgoing`). */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
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
 * AbortController per request.
 */
export class ResponseLink implements ClientLink {
  /** Each listener with its `close` handler (usually one: the exchange's). */
  private readonly entries: { listener: () => void; onClose: () => void }[] = [];

  constructor(private readonly res: ServerResponse) {}

  get aborted(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.entries.some((e) => e.listener === listener)) return;
    const onClose = () => {
      this.forget(listener);
      if (!this.res.writableFinished) listener();
    };
    this.entries.push({ listener, onClose });
    this.res.once('close', onClose);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const onClose = this.forget(listener);
    if (onClose) this.res.off('close', onClose);
  }

  private forget(listener: () => void): (() => void) | undefined {
    const i = this.entries.findIndex((e) => e.listener === listener);
    return i < 0 ? undefined : this.entries.splice(i, 1)[0]?.onClose;
  }
}

export function nodeClientLink(env: unknown): ClientLink | undefined {
  const res = (env as Bindings)?.outgoing;
  return res ? new ResponseLink(res) : undefined;
}
