/**
 * Prefill/decode plans: each request is a prefill leg, then a decode leg, both through the one
 * attempt loop (retries, breakers, leases per worker and role), on one exchange (one deadline,
 * one client signal: a client that leaves cancels whichever leg runs). The decode's answer is
 * what the pipeline relays; a prefill that fails once its retries are spent is passed through
 * instead, and no decode is sent.
 * - NIXL / Mooncake (sequential): prefill, read its answer, then decode with the KV params. A
 *   decode failure before its first byte retries on the decode pool with the same params; a
 *   decode attempt that would start after the prefill's KV hold time (default 30 s) is not sent:
 *   the request gets one fresh prefill instead (said in the log).
 * - P2P-NCCL: the decode worker is picked first (the prefill pushes its KV to the engine named in
 *   the request id); a decode retry on another worker also needs a fresh prefill.
 * - Mooncake concurrent dispatch: pd-concurrent.ts.
 */
import { RouterError } from '../contracts/errors.ts';
import type { RoutedWorker } from '../contracts/fleet-api.ts';
import { maxAttempts } from '../resilience/backoff.ts';
import { AttemptRun, routeFirst, runAttempts } from './attempts.ts';
import type { ProxyCall } from './context.ts';
import type { Exchange } from './exchange.ts';
import type { LegResult } from './leg.ts';
import { decodeBody, type JsonObject, prefillBody } from './pd-bodies.ts';
import { concurrentPlan } from './pd-concurrent.ts';
import {
  mooncakeDecodeParams,
  mooncakePrefillParams,
  nixlPrefillParams,
  p2pRequestId,
  transferId,
  uuidHex,
} from './pd-connectors.ts';
import type { PdContext } from './pd-context.ts';
import { finishPrefill, type Prefilled, pdLeg, runDecode } from './pd-legs.ts';

export type { PdContext } from './pd-context.ts';

/** Runs the request's prefill and decode legs; the result is what the client gets. */
export function runPd(ex: Exchange, call: ProxyCall, pd: PdContext, json: JsonObject): Promise<LegResult> {
  pd.instruments.requests.labels(pd.connector).inc();
  if (pd.connector === 'p2p_nccl') return p2pPlan(ex, call, pd, json);
  if (pd.connector === 'mooncake' && pd.concurrent) return concurrentPlan(ex, call, pd, json);
  return sequentialPlan(ex, call, pd, json);
}

/** Whether the prefill's KV blocks are still held for a decode starting now. */
function withinHold(ex: Exchange, pd: PdContext, prefilled: Prefilled): boolean {
  return ex.ctx.deps.clock.monotonic() - prefilled.at <= pd.kvHoldMs;
}

/** How many times one request may start over with a fresh prefill (the attempt limit). */
function roundsFor(ex: Exchange): number {
  return Math.max(1, maxAttempts(ex.ctx.retry));
}

function holdPassed(ex: Exchange, pd: PdContext, prefilled: Prefilled | undefined, moved: boolean): void {
  const reason = moved ? 'decode_moved' : 'kv_hold_expired';
  pd.instruments.freshPrefills.labels(reason).inc();
  ex.ctx.deps.logger.warn(
    moved
      ? 'decode leg moved to another worker: its prefill pushed the KV elsewhere, running a fresh prefill'
      : `decode leg could not start within the prefill's KV hold time (${pd.kvHoldMs / 1000} s): running a fresh prefill`,
    { request_id: ex.call.requestId, prefill_worker: prefilled?.worker.id },
  );
}

function gaveUp(pd: PdContext): LegResult {
  const message = `no decode leg could start within the prefill's KV hold time (${pd.kvHoldMs / 1000} s)`;
  pd.instruments.legErrors.labels('decode', 'kv_hold_expired').inc();
  return { kind: 'error', error: new RouterError('upstream_timeout', message) };
}

/** The decode leg's KV params after a prefill, or the error to answer with. */
async function decodeParams(
  pd: PdContext,
  prefilled: Prefilled,
  xfer: string | undefined,
): Promise<JsonObject | undefined | LegResult> {
  if (xfer === undefined) {
    if (prefilled.kv === undefined) pd.instruments.kvParamsMissing.inc();
    return prefilled.kv;
  }
  const engineId = await pd.bootstrap?.resolve({ ...prefilled.worker, role: 'prefill' });
  if (engineId !== undefined) return mooncakeDecodeParams(xfer, prefilled.worker, engineId);
  pd.instruments.legErrors.labels('decode', 'bootstrap_unknown').inc();
  const message = `the Mooncake bootstrap server of prefill worker ${prefilled.worker.id} did not answer /query`;
  return { kind: 'error', error: new RouterError('upstream_unreachable', message) };
}

const isResult = (v: unknown): v is LegResult =>
  typeof v === 'object' && v !== null && typeof (v as { kind?: unknown }).kind === 'string';

/** One NIXL/Mooncake round: a prefill, then its decode; `again` when the decode must start over. */
async function sequentialRound(
  ex: Exchange,
  call: ProxyCall,
  pd: PdContext,
  json: JsonObject,
  round: number,
): Promise<LegResult | { kind: 'again'; prefilled: Prefilled }> {
  const { clock, newId } = ex.ctx.deps;
  const xfer = pd.connector === 'mooncake' ? transferId(newId) : undefined;
  const kv = xfer === undefined ? nixlPrefillParams() : mooncakePrefillParams(xfer);
  const started = clock.monotonic();
  // A fresh prefill gets an id of its own: the first one's engine may still hold blocks under it.
  const ids = round === 1 ? {} : { requestIdFor: () => `${call.requestId}-${round}` };
  const prefillLeg = pdLeg(call, 'prefill', { body: prefillBody(json, call.route, kv), ...ids });
  const p = await finishPrefill(ex, pd, await runAttempts(ex, prefillLeg), started);
  if (!p.ok) return p.result;
  const params = await decodeParams(pd, p.prefilled, xfer);
  if (isResult(params)) return params;
  const prefilled = p.prefilled;
  const decodeLeg = pdLeg(call, 'decode', {
    body: params === undefined ? call.body : decodeBody(json, params),
    admits: () => withinHold(ex, pd, prefilled),
    ...ids,
  });
  const result = await runDecode(ex, pd, decodeLeg);
  return result.kind === 'withdrawn' && !ex.stopped ? { kind: 'again', prefilled } : result;
}

async function sequentialPlan(ex: Exchange, call: ProxyCall, pd: PdContext, json: JsonObject) {
  const rounds = roundsFor(ex);
  for (let round = 1; ; round++) {
    const result = await sequentialRound(ex, call, pd, json, round);
    if (result.kind !== 'again') return result.kind === 'withdrawn' ? gaveUp(pd) : result;
    if (round >= rounds) return gaveUp(pd);
    holdPassed(ex, pd, result.prefilled, false);
  }
}

async function p2pPlan(ex: Exchange, call: ProxyCall, pd: PdContext, json: JsonObject): Promise<LegResult> {
  const { clock, newId, fleet } = ex.ctx.deps;
  const rounds = roundsFor(ex);
  let avoid: string[] = [];
  for (let round = 1; ; round++) {
    const hex = uuidHex(newId);
    let decodeWorker: RoutedWorker | undefined;
    let prefilled: Prefilled | undefined;
    const idFor = (prefill: RoutedWorker) =>
      p2pRequestId(prefill, decodeWorker as RoutedWorker, hex, pd.zmqAddress);
    const decodeLeg = pdLeg(call, 'decode', {
      body: call.body,
      requestIdFor: () => idFor((prefilled as Prefilled).worker),
      admits: (w) => w.id === decodeWorker?.id && prefilled !== undefined && withinHold(ex, pd, prefilled),
    });
    const decodeRun = new AttemptRun(ex, decodeLeg);
    decodeRun.avoid.push(...avoid);
    const routed = await routeFirst(decodeRun);
    if (routed.kind !== 'routed') return routed;
    decodeWorker = routed.worker;
    const started = clock.monotonic();
    const prefillLeg = pdLeg(call, 'prefill', { body: prefillBody(json, call.route), requestIdFor: idFor });
    const p = await finishPrefill(ex, pd, await runAttempts(ex, prefillLeg), started);
    if (!p.ok) {
      await fleet.settle(routed.lease, { kind: 'aborted' });
      return p.result;
    }
    prefilled = p.prefilled;
    const result = await runDecode(ex, pd, decodeLeg, decodeRun, routed);
    if (result.kind !== 'withdrawn' || ex.stopped) return result.kind === 'withdrawn' ? gaveUp(pd) : result;
    if (round >= rounds) return gaveUp(pd);
    holdPassed(ex, pd, prefilled, withinHold(ex, pd, prefilled));
    avoid = [...new Set([...decodeRun.avoid, ...decodeRun.exclude, decodeWorker.id])];
  }
}
