/**
 * Mooncake's concurrent dispatch (what vLLM's own Mooncake proxy does): the decode leg is sent
 * without waiting for the prefill's answer; the decode engine pulls the KV as soon as the prefill
 * engine has it. The decode body names the prefill engine, so the prefill worker is picked first
 * and the prefill leg stays on it (retries on the same worker only). Unlike vLLM's proxy, a
 * prefill that fails (its retries spent) calls the decode off while it has not answered yet, and
 * the client gets the prefill's failure; a decode that fails calls the prefill off.
 */
import { RouterError } from '../contracts/errors.ts';
import type { RoutedWorker } from '../contracts/fleet-api.ts';
import { discardBody } from '../upstream/body.ts';
import { AttemptRun, routeFirst, runAttempts } from './attempts.ts';
import type { ProxyCall } from './context.ts';
import type { Exchange } from './exchange.ts';
import type { LegResult } from './leg.ts';
import { decodeBody, type JsonObject, prefillBody } from './pd-bodies.ts';
import { mooncakeDecodeParams, mooncakePrefillParams, transferId } from './pd-connectors.ts';
import type { PdContext } from './pd-context.ts';
import { finishPrefill, type PrefillOutcome, pdLeg, runDecode } from './pd-legs.ts';

/** A prefill failure nobody will answer with: its body discarded, its lease settled. */
function dispose(ex: Exchange, outcome: PrefillOutcome): void {
  if (outcome.ok || outcome.result.kind !== 'response') return;
  const { res, lease, prefetched } = outcome.result;
  if (prefetched) prefetched.reader.cancel().catch(() => {});
  else discardBody(res.body);
  void ex.ctx.deps.fleet.settle(lease, outcome.result.outcome);
}

export async function concurrentPlan(
  ex: Exchange,
  call: ProxyCall,
  pd: PdContext,
  json: JsonObject,
): Promise<LegResult> {
  const { clock, newId, fleet } = ex.ctx.deps;
  const xfer = transferId(newId);
  let pinned: RoutedWorker | undefined;
  const prefillLeg = pdLeg(call, 'prefill', {
    body: prefillBody(json, call.route, mooncakePrefillParams(xfer)),
    background: true,
    pinned: true,
    admits: (w) => w.id === pinned?.id,
  });
  const prefillRun = new AttemptRun(ex, prefillLeg);
  const routed = await routeFirst(prefillRun);
  if (routed.kind !== 'routed') return routed;
  pinned = routed.worker;
  const engineId = await pd.bootstrap?.resolve({ ...routed.worker, role: 'prefill' });
  if (engineId === undefined) {
    await fleet.settle(routed.lease, { kind: 'aborted' });
    pd.instruments.legErrors.labels('decode', 'bootstrap_unknown').inc();
    const message = `the Mooncake bootstrap server of prefill worker ${routed.worker.id} did not answer /query`;
    return { kind: 'error', error: new RouterError('upstream_unreachable', message) };
  }
  const decodeLeg = pdLeg(call, 'decode', {
    body: decodeBody(json, mooncakeDecodeParams(xfer, routed.worker, engineId)),
  });
  const decodeRun = new AttemptRun(ex, decodeLeg);
  const started = clock.monotonic();
  const prefill = runAttempts(ex, prefillLeg, prefillRun, routed)
    .then((r) => finishPrefill(ex, pd, r, started))
    .then((p) => {
      // Withdrawn without being called off: a retry would have left the worker the decode pulls from.
      if (!p.ok && !prefillRun.off) decodeRun.callOff();
      return p;
    });
  const decoded = await runDecode(ex, pd, decodeLeg, decodeRun);
  if (decoded.kind === 'withdrawn') {
    const p = await prefill;
    if (!p.ok && p.result.kind === 'withdrawn') {
      pd.instruments.legErrors.labels('prefill', 'upstream_unreachable').inc();
      const message = `prefill worker ${routed.worker.id} failed; its decode leg was to pull the KV from it`;
      return { kind: 'error', error: new RouterError('upstream_unreachable', message) };
    }
    if (!p.ok) return p.result;
    return { kind: 'error', error: new RouterError('internal_error', 'decode leg called off') };
  }
  const answered = decoded.kind === 'response' && decoded.res.status < 400;
  if (!answered) prefillRun.callOff();
  // The prefill may still run: a failure it ends with now has nobody to go to.
  void prefill.then((p) => dispose(ex, p));
  return decoded;
}
