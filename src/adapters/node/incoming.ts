/** What the core reads of a request from Node's own request object (@hono/node-server: c.env.incoming). */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Context } from 'hono';

/** The peer's IP address. */
export function nodePeerAddress(c: Context): string | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
}

/** The request's headers as Node parsed them (lower-case names): no `Headers` object is built. */
export function nodeRequestHeaders(c: Context): IncomingHttpHeaders | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.headers;
}
