/**
 * least_loaded (PrimeIntellect): every request must carry a session id; a session sticks to its
 * worker, and a new session goes to the worker with the fewest assigned sessions (ties by load,
 * processed count, rotating cursor). Without a session id the request is refused with a 503
 * `session_required` that says how to send one. Sessions are released by
 * `POST /finish_session` or after VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S idle; beyond
 * VLLM_ROUTER_SLL_MAX_SESSIONS (or an id longer than VLLM_ROUTER_SLL_MAX_SESSION_ID_BYTES) a
 * request is placed the same way but not recorded.
 */
import { RouterError } from '../contracts/errors.ts';
import type { RouteInput } from '../contracts/fleet-api.ts';
import type { Policy, PolicyContext, PolicyWorker } from './policy.ts';
import { SessionTable, sessionHooks, utf8Length } from './session-table.ts';
import { tieBreakerFor } from './tie-break.ts';

export function sessionRequiredMessage(sessionKey: string | undefined): string {
  const sources = [
    ...(sessionKey ? [`the ${sessionKey} header or body field`] : []),
    'an X-Session-ID (or X-User-ID, X-Tenant-ID, X-Correlation-ID) header',
    'a session_id, user, user_id or session_params.session_id field in the JSON body',
  ];
  return `the least_loaded policy routes by session and this request has no session id: send ${sources.join(', or ')}`;
}

export function createLeastLoaded(ctx: PolicyContext): Policy {
  const { sessionExpirationSecs, maxSessions, maxSessionIdBytes } = ctx.sll;
  const ttlMs = sessionExpirationSecs * 1000;
  const table = new SessionTable({
    ttlMs,
    activeWindowMs: ttlMs,
    onAssign: (id, worker) => ctx.sharing?.sessionPlaced(ctx.pool, id, worker),
  });
  const ties = tieBreakerFor(ctx);
  const sessions = (w: PolicyWorker) => table.pinnedOn(w.id);
  const message = sessionRequiredMessage(ctx.settings.sessionKey);

  return {
    name: 'least_loaded',
    select(candidates: readonly PolicyWorker[], input: RouteInput) {
      const id = input.sessionId;
      if (!id) throw new RouterError('session_required', message);
      const now = ctx.clock.now();
      table.age(now);
      const entry = table.get(id);
      if (entry) {
        const current = candidates.find((w) => w.id === entry.worker);
        if (current) {
          table.touch(id, now);
          return current;
        }
        table.release(id);
      }
      const chosen = ties.pick(candidates, sessions);
      if (table.size < maxSessions && utf8Length(id) <= maxSessionIdBytes) table.assign(id, chosen.id, now);
      return chosen;
    },
    ...sessionHooks(table, () => ties.reset(), { now: () => ctx.clock.now(), maxSessions }),
  };
}
