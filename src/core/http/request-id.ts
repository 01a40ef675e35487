/** The request id: the first configured header the client sent, else a fresh one from the injected id source. */
import type { Context } from 'hono';

export function requestIdOf(c: Context, headerNames: readonly string[], newId: () => string): string {
  for (const name of headerNames) {
    const value = c.req.header(name);
    if (value) return value;
  }
  return newId();
}
