/**
 * The pieces both prefill/decode plans share: the PD context, building a prefill or decode leg
 * from the client's request, and finishing a prefill leg (its answer read to the end, its lease
 * settled, its `kv_transfer_params` taken out), and running a decode leg. Each leg runs through the one attempt loop
 * (attempts.ts) like a regular request: only the body, the role and the request id differ.
 */
import { RouterError } from '../contracts/errors.ts';
import type { RoutedWorker, RouteInput } from '../contracts/fleet-api.ts';
import { concatChunks } from '../upstream/body.ts';
import type { AttemptRun } from './attempt-run.ts';
import { runAttempts } from './attempts.ts';
import type { ProxyCall } from './context.ts';
import type { Exchange } from './exchange.ts';
import type { Leg, LegResult, Routed } from './leg.ts';
import { isObject, type JsonObject } from './pd-bodies.ts';
import type { PdContext } from './pd-context.ts';

/** A prefill that answered 2xx: who answered, when it finished, and what it said about its KV. */
export interface Prefilled {
  worker: RoutedWorker;
  /** Monotonic ms when its answer was read. */
  at: number;
  /** The answer's top-level `kv_transfer_params`, when it had one. */
  kv?: JsonObject;
}

/** A finished prefill leg: the KV is ready, or the result to answer the client with. */
export type PrefillOutcome = { ok: true; prefilled: Prefilled } | { ok: false; result: LegResult };

/** Answers larger than this are not a prefill's one-token answer. */
const MAX_PREFILL_ANSWER = 8 << 20;

const decoder = new TextDecoder();

/** The routing input of one role's leg (the same text, keys and session as the request). */
export function legInput(call: ProxyCall, role: 'prefill' | 'decode'): RouteInput {
  const { stream: _stream, ...input } = call.info;
  return { ...input, role };
}

/** A leg of the client's request for one role. */
export function pdLeg(call: ProxyCall, role: 'prefill' | 'decode', parts: Partial<Leg>): Leg {
  return {
    input: legInput(call, role),
    role,
    target: call.target,
    headers: call.headers,
    body: null,
    stream: role === 'decode' && call.info.stream,
    ...parts,
  };
}

async function readAll(result: Extract<LegResult, { kind: 'response' }>): Promise<Uint8Array> {
  const { res, prefetched } = result;
  if (res.body === null) return new Uint8Array(0);
  if (res.body instanceof Uint8Array) return res.body;
  const reader = prefetched?.reader ?? res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const add = (chunk: Uint8Array) => {
    size += chunk.byteLength;
    if (size > MAX_PREFILL_ANSWER) throw new Error(`prefill answer over ${MAX_PREFILL_ANSWER} bytes`);
    chunks.push(chunk);
  };
  if (prefetched && !prefetched.first.done) add(prefetched.first.value);
  if (!prefetched?.first.done) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      add(value);
    }
  }
  return concatChunks(chunks, size);
}

/** The `kv_transfer_params` of a prefill's JSON answer (undefined when absent or not JSON). */
export function kvParamsOf(bytes: Uint8Array): JsonObject | undefined {
  try {
    const json = JSON.parse(decoder.decode(bytes)) as unknown;
    const kv = isObject(json) ? json.kv_transfer_params : undefined;
    return isObject(kv) ? kv : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A prefill leg's result: a 2xx answer is read to its end (its lease settled) and its KV params
 * taken; anything else (the engine's error status once retries are spent, a router error, the
 * client gone) is what the client gets.
 */
export async function finishPrefill(
  ex: Exchange,
  pd: PdContext,
  result: LegResult,
  started: number,
): Promise<PrefillOutcome> {
  const { fleet, clock, logger } = ex.ctx.deps;
  if (result.kind !== 'response') {
    if (result.kind === 'error') pd.instruments.legErrors.labels('prefill', result.error.code).inc();
    return { ok: false, result };
  }
  const { res, worker, lease, outcome } = result;
  if (res.status < 200 || res.status >= 300) {
    pd.instruments.legErrors.labels('prefill', String(res.status)).inc();
    return { ok: false, result };
  }
  let bytes: Uint8Array;
  try {
    bytes = await readAll(result);
  } catch (err) {
    if (ex.stopped) {
      await fleet.settle(lease, ex.timedOut ? { kind: 'failure' } : { kind: 'aborted' });
      return { ok: false, result: ex.clientGone ? { kind: 'aborted' } : stoppedError(ex) };
    }
    await fleet.settle(lease, { kind: 'failure', status: res.status, stalled: true });
    pd.instruments.legErrors.labels('prefill', 'upstream_body_error').inc();
    const message = `the prefill worker's answer broke off (request id ${ex.call.requestId})`;
    return {
      ok: false,
      result: { kind: 'error', error: new RouterError('upstream_body_error', message, { cause: err }) },
    };
  }
  await fleet.settle(lease, outcome);
  const at = clock.monotonic();
  pd.instruments.prefillDuration.observe((at - started) / 1000);
  const kv = kvParamsOf(bytes);
  if (logger.enabled('debug')) {
    logger.debug('prefill done', {
      request_id: ex.call.requestId,
      worker: worker.id,
      ms: Math.round((at - started) * 10) / 10,
      kv_transfer_params: kv !== undefined,
    });
  }
  return { ok: true, prefilled: kv === undefined ? { worker, at } : { worker, at, kv } };
}

/** Runs a decode leg; its duration is recorded when the answer ends. */
export async function runDecode(
  ex: Exchange,
  pd: PdContext,
  leg: Leg,
  run?: AttemptRun,
  first?: Routed,
): Promise<LegResult> {
  const { clock } = ex.ctx.deps;
  const started = clock.monotonic();
  const result = await runAttempts(ex, leg, run, first);
  if (result.kind === 'response') {
    if (result.res.status >= 400) pd.instruments.legErrors.labels('decode', String(result.res.status)).inc();
    ex.onFinish = () => pd.instruments.decodeDuration.observe((clock.monotonic() - started) / 1000);
  } else if (result.kind === 'error') {
    pd.instruments.legErrors.labels('decode', result.error.code).inc();
  }
  return result;
}

function stoppedError(ex: Exchange): LegResult {
  const error = ex.shutDown
    ? new RouterError('shutdown', 'router shutting down')
    : new RouterError('upstream_timeout', `request timed out after ${ex.ctx.timeoutMs} ms`);
  return { kind: 'error', error };
}
