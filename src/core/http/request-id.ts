/** The request id: the first configured header the client sent, else a fresh UUID. */
import type { Context } from 'hono';

export function requestIdOf(c: Context, headerNames: readonly string[]): string {
  for (const name of headerNames) {
    const value = c.req.header(name);
    if (value) return value;
  }
  return crypto.randomUUID();
}
