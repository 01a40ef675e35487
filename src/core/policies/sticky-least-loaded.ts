/**
 * sticky_least_loaded (vllm-router): sessions stick to a worker; new sessions go where the fewest
 * sessions are active.
 * - Session id: `x-session-id`, `x-user-id`, `x-tenant-id`, `x-correlation-id`, then the body's
 *   `session_params.session_id`, `user`, `session_id`, `user_id` (see routing-input.ts).
 * - No id, an id longer than VLLM_ROUTER_SLL_MAX_SESSION_ID_BYTES, or a new id while
 *   VLLM_ROUTER_SLL_MAX_SESSIONS are tracked: routed to the least-active worker (ties by load,
 *   processed, rotating cursor) and not recorded.
 * - Known id on an eligible worker: stick. Its worker ineligible (unhealthy, draining, excluded,
 *   removed): the session is placed again like a new one.
 * - New id: the worker with the fewest active sessions, ties by rendezvous hash of the id.
 * - Sessions idle for VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S are forgotten; sessions idle for
 *   VLLM_ROUTER_SLL_ACTIVE_WINDOW_IN_S (default: the expiration) stay pinned but stop counting
 *   as active load.
 * - Rebalancing (VLLM_ROUTER_SLL_REBALANCE_RATIO > 0): when a session's worker has more than
 *   ratio × the active sessions of the least-active worker, and at least 4 more, the session
 *   moves there on its request; at most one move per 30 s per pool, and never a session placed
 *   within the last 5 minutes.
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import type { Policy, PolicyContext, PolicyWorker } from './policy.ts';
import { addGaugeSource, sllRebalances } from './policy-metrics.ts';
import { rendezvousPick } from './rendezvous-hash.ts';
import { type SessionEntry, SessionTable, sessionHooks, utf8Length } from './session-table.ts';
import { TieBreaker } from './tie-break.ts';

export const REBALANCE_INTERVAL_MS = 30_000;
export const REBALANCE_COOLDOWN_MS = 300_000;
export const REBALANCE_MIN_GAP = 4;

export function createStickyLeastLoaded(ctx: PolicyContext): Policy {
  const { sessionExpirationSecs, maxSessions, maxSessionIdBytes, activeWindowSecs, rebalanceRatio } = ctx.sll;
  const table = new SessionTable({
    ttlMs: sessionExpirationSecs * 1000,
    activeWindowMs: (activeWindowSecs ?? sessionExpirationSecs) * 1000,
  });
  const ties = new TieBreaker();
  const rebalances = sllRebalances(ctx.metrics);
  let lastRebalance = Number.NEGATIVE_INFINITY;
  let exported = false;

  const active = (w: PolicyWorker) => table.activeOn(w.id);

  /** Fewest active sessions; ties by rendezvous hash of the session id. */
  const placeFor = (candidates: readonly PolicyWorker[], id: string): PolicyWorker => {
    let min = Number.POSITIVE_INFINITY;
    for (const w of candidates) min = Math.min(min, active(w));
    const least = candidates.filter((w) => active(w) === min);
    return least.length === 1 ? (least[0] as PolicyWorker) : rendezvousPick(least, id);
  };

  const maybeRebalance = (
    candidates: readonly PolicyWorker[],
    id: string,
    entry: SessionEntry,
    current: PolicyWorker,
    now: number,
  ): PolicyWorker => {
    if (!(rebalanceRatio > 0) || candidates.length < 2) return current;
    if (now - lastRebalance < REBALANCE_INTERVAL_MS || now - entry.assignedAt < REBALANCE_COOLDOWN_MS) {
      return current;
    }
    const target = placeFor(
      candidates.filter((w) => w !== current),
      id,
    );
    const from = active(current);
    const to = active(target);
    if (!(from > rebalanceRatio * to) || from - to < REBALANCE_MIN_GAP) return current;
    table.assign(id, target.id, now);
    lastRebalance = now;
    rebalances.labels(current.id, target.id).inc();
    return target;
  };

  const exportGauges = () => {
    exported = true;
    addGaugeSource(
      ctx.metrics,
      'vllm_router_sll_active_sessions',
      'sticky_least_loaded sessions active within the window, per worker',
      (add) => {
        for (const [w, n] of table.activeCountsByWorker()) add(w, n);
      },
    );
    addGaugeSource(
      ctx.metrics,
      'vllm_router_sll_pinned_sessions',
      'sticky_least_loaded sessions pinned (not expired), per worker',
      (add) => {
        for (const [w, n] of table.pinnedCountsByWorker()) add(w, n);
      },
    );
  };

  return {
    name: 'sticky_least_loaded',
    select(candidates: readonly PolicyWorker[], input: RouteInput) {
      if (!exported) exportGauges();
      const now = ctx.clock.now();
      table.age(now);
      const id = input.sessionId;
      if (!id || utf8Length(id) > maxSessionIdBytes) return ties.pick(candidates, active);
      const entry = table.get(id);
      if (entry) {
        const current = candidates.find((w) => w.id === entry.worker);
        if (current) {
          table.touch(id, now);
          return maybeRebalance(candidates, id, entry, current, now);
        }
        table.release(id);
      }
      if (table.size >= maxSessions) return ties.pick(candidates, active);
      const chosen = placeFor(candidates, id);
      table.assign(id, chosen.id, now);
      return chosen;
    },
    ...sessionHooks(table, () => {
      ties.reset();
      lastRebalance = Number.NEGATIVE_INFINITY;
    }),
  };
}
