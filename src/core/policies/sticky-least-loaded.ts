/**
 * sticky_least_loaded (vllm-router): sessions stick to a worker; new sessions go where the fewest
 * sessions are active.
 *
 * The vLLM Router README ("Sticky least-loaded sessions", "Optional bounded session rebalancing"),
 * as quoted in issue 13 (the section itself was not in the stored snapshots of vllm-project/router):
 * - "The moving session is excluded from the comparison."
 * - "All policy instances in one router process share a limit of one voluntary move per 30 seconds."
 * - The five-minute cooldown applies to a session that was moved; a session with an outstanding
 *   request never moves.
 * - "a session counts as load while a request is in flight or its last request started or
 *   finished within the active window".
 * - "expired entries are swept on routing requests at most once per minute. Revisited sessions
 *   are checked for expiry before refreshing their affinity."
 *
 * What this file does:
 * - Session id: `x-session-id`, `x-user-id`, `x-tenant-id`, `x-correlation-id`, then the body's
 *   `session_params.session_id`, `user`, `session_id`, `user_id` (see routing-input.ts).
 * - No id, an id longer than VLLM_ROUTER_SLL_MAX_SESSION_ID_BYTES, or a new id while
 *   VLLM_ROUTER_SLL_MAX_SESSIONS are tracked: routed to the least-active worker (ties by load,
 *   processed, rotating cursor) and not recorded.
 * - Known id on an eligible worker: stick. Its worker ineligible (unhealthy, draining, excluded,
 *   removed): the session is placed again like a new one (not a voluntary move: no cooldown).
 * - New id: the worker with the fewest active sessions, ties by rendezvous hash of the id.
 * - Sessions idle (no request in flight, none started or finished) for
 *   VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S are forgotten, swept at most once per minute and
 *   checked on revisit; after VLLM_ROUTER_SLL_ACTIVE_WINDOW_IN_S (default: the expiration) they
 *   stay pinned but stop counting as active load.
 * - Rebalancing (VLLM_ROUTER_SLL_REBALANCE_RATIO > 0), on a session's own request: with the
 *   session itself left out of its worker's count, when that count exceeds ratio × the active
 *   sessions of the least-active other worker and is at least 4 more, the session moves there.
 *   Never a session with a request in flight, never one moved within the last 5 minutes, and at
 *   most one move per 30 s across every pool of the router (SharedPolicyState).
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import {
  createSharedPolicyState,
  type Policy,
  type PolicyContext,
  type PolicyWorker,
  type SharedPolicyState,
} from './policy.ts';
import { addGaugeSource, sllRebalances } from './policy-metrics.ts';
import { rendezvousPick } from './rendezvous-hash.ts';
import { type SessionEntry, SessionTable, sessionHooks, utf8Length } from './session-table.ts';
import { tieBreakerFor } from './tie-break.ts';

export const REBALANCE_INTERVAL_MS = 30_000;
export const REBALANCE_COOLDOWN_MS = 300_000;
export const REBALANCE_MIN_GAP = 4;
export const SWEEP_INTERVAL_MS = 60_000;

interface Rebalancer {
  ratio: number;
  shared: SharedPolicyState;
  table: SessionTable;
  onMove: (from: string, to: string) => void;
}

/** Fewest active sessions; ties by rendezvous hash of the session id. */
function placeFor(table: SessionTable, candidates: readonly PolicyWorker[], id: string): PolicyWorker {
  let min = Number.POSITIVE_INFINITY;
  for (const w of candidates) min = Math.min(min, table.activeOn(w.id));
  const least = candidates.filter((w) => table.activeOn(w.id) === min);
  return least.length === 1 ? (least[0] as PolicyWorker) : rendezvousPick(least, id);
}

/** The voluntary move of a session on its request, if the rules allow one (see the header). */
function maybeRebalance(
  r: Rebalancer,
  candidates: readonly PolicyWorker[],
  session: { id: string; entry: SessionEntry; current: PolicyWorker },
  now: number,
): PolicyWorker {
  const { id, entry, current } = session;
  if (!(r.ratio > 0) || candidates.length < 2 || r.table.inFlight(id) > 0) return current;
  if (now - r.shared.lastRebalanceAt < REBALANCE_INTERVAL_MS) return current;
  if (entry.movedAt !== undefined && now - entry.movedAt < REBALANCE_COOLDOWN_MS) return current;
  const target = placeFor(
    r.table,
    candidates.filter((w) => w !== current),
    id,
  );
  // The moving session is left out: it is active on `current` (it was just touched).
  const from = r.table.activeOn(current.id) - 1;
  const to = r.table.activeOn(target.id);
  if (!(from > r.ratio * to) || from - to < REBALANCE_MIN_GAP) return current;
  r.table.assign(id, target.id, now, now);
  r.shared.lastRebalanceAt = now;
  r.onMove(current.id, target.id);
  return target;
}

export function createStickyLeastLoaded(ctx: PolicyContext): Policy {
  const { sessionExpirationSecs, maxSessions, maxSessionIdBytes, activeWindowSecs, rebalanceRatio } = ctx.sll;
  const table = new SessionTable({
    ttlMs: sessionExpirationSecs * 1000,
    activeWindowMs: (activeWindowSecs ?? sessionExpirationSecs) * 1000,
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    onAssign: (id, worker) => ctx.sharing?.sessionPlaced(ctx.pool, id, worker),
  });
  const ties = tieBreakerFor(ctx);
  const rebalances = sllRebalances(ctx.metrics);
  const rebalancer: Rebalancer = {
    ratio: rebalanceRatio,
    shared: ctx.shared ?? createSharedPolicyState(),
    table,
    onMove: (from, to) => rebalances.labels(from, to).inc(),
  };
  /** Workers this instance has seen as candidates: their gauges read 0 rather than vanish. */
  const known = new Set<string>();
  let exported = false;

  const active = (w: PolicyWorker) => table.activeOn(w.id);

  const exportGauges = () => {
    exported = true;
    const source = (counts: () => ReadonlyMap<string, number>) => (add: (w: string, n: number) => void) => {
      for (const w of known) add(w, 0);
      for (const [w, n] of counts()) add(w, n);
    };
    addGaugeSource(
      ctx.metrics,
      'vllm_router_sll_active_sessions',
      'sticky_least_loaded sessions counted as load (request in flight, or one started or finished within the active window), per worker',
      source(() => table.activeCountsByWorker()),
    );
    addGaugeSource(
      ctx.metrics,
      'vllm_router_sll_pinned_sessions',
      'sticky_least_loaded sessions pinned (not expired), per worker',
      source(() => table.pinnedCountsByWorker()),
    );
  };

  const hooks = sessionHooks(table, () => ties.reset(), { now: () => ctx.clock.now(), maxSessions });
  return {
    name: 'sticky_least_loaded',
    select(candidates: readonly PolicyWorker[], input: RouteInput) {
      if (!exported) exportGauges();
      for (const w of candidates) known.add(w.id);
      const now = ctx.clock.now();
      table.age(now);
      const id = input.sessionId;
      if (!id || utf8Length(id) > maxSessionIdBytes) return ties.pick(candidates, active);
      const entry = table.get(id, now);
      if (entry) {
        const current = candidates.find((w) => w.id === entry.worker);
        if (current) {
          table.touch(id, now);
          return maybeRebalance(rebalancer, candidates, { id, entry, current }, now);
        }
        table.release(id);
      }
      if (table.size >= maxSessions) table.age(now, true);
      if (table.size >= maxSessions) return ties.pick(candidates, active);
      const chosen = placeFor(table, candidates, id);
      table.assign(id, chosen.id, now);
      return chosen;
    },
    onDispatch(_worker, input) {
      if (input.sessionId) table.started(input.sessionId);
    },
    onSettle(_worker, _outcome, input) {
      if (input.sessionId) table.finished(input.sessionId, ctx.clock.now());
    },
    ...hooks,
    onWorkerRemoved: (workerId: string) => {
      known.delete(workerId);
      hooks.onWorkerRemoved(workerId);
    },
  };
}
