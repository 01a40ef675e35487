// Delivery of inference responses: JSON after a delay, SSE token by token, and the failure modes
// that act on the wire (hang, reset, midstream cut, stall after the headers).
import type { JsonObject } from './openai-format.ts';
import { cutPoint } from './plan.ts';
import {
  abortError,
  connectionResetError,
  type HeaderRecord,
  transportError,
  waitForAbort,
} from './respond.ts';
import type { RequestTracker, SimState } from './state.ts';
import { timedBody } from './stream.ts';

const encoder = new TextEncoder();

/** A failure that breaks a 200 response's body: cut the connection, or stop sending. */
export type BodyFault = 'midstream' | 'stall' | null;

/** Never answers; settles as aborted when the client goes away, then rejects like fetch does. */
export async function hang(tracker: RequestTracker): Promise<never> {
  await waitForAbort(tracker.signal);
  tracker.clientGone();
  throw transportError(abortError(tracker.c.req.raw.signal));
}

/** Resets the connection (with the runner's hook), or rejects like fetch on a reset. */
export async function reset(state: SimState, tracker: RequestTracker): Promise<never> {
  tracker.finish({ status: null, completed: false });
  const hook = state.config.resetConnection;
  if (!hook) throw transportError(connectionResetError());
  hook(tracker.c);
  await waitForAbort(tracker.c.req.raw.signal);
  throw transportError(connectionResetError());
}

export interface JsonDelivery {
  body: JsonObject;
  headers: HeaderRecord;
  delayMs: number;
  fault: BodyFault;
  tokens: number;
  onSuccess?: () => void;
}

/**
 * Answers JSON after `delayMs`. Both faults promise the full content-length: midstream sends half
 * of it and cuts the connection, stall sends none of it and waits for the client to leave.
 */
export async function deliverJson(
  state: SimState,
  tracker: RequestTracker,
  d: JsonDelivery,
): Promise<Response> {
  if (d.delayMs > 0) await state.config.sleep(d.delayMs, tracker.signal);
  if (tracker.done) throw transportError(abortError(tracker.c.req.raw.signal));
  const text = JSON.stringify(d.body);
  const headers = { 'content-type': 'application/json', ...d.headers };
  tracker.status = 200;
  if (d.fault === null) {
    tracker.finish({ status: 200, completed: true, tokensSent: d.tokens });
    d.onSuccess?.();
    return new Response(text, { status: 200, headers });
  }
  const bytes = encoder.encode(text);
  const stall = d.fault === 'stall';
  const body = timedBody({
    chunks: stall ? [] : [bytes.subarray(0, bytes.byteLength >> 1)],
    dueMs: () => 0,
    cutAfter: stall ? 0 : 1,
    stall,
    startMs: 0,
    now: () => 0,
    sleep: state.config.sleep,
    signal: tracker.signal,
    onProgress: () => {},
    onEnd: (how) =>
      tracker.finish({ status: 200, completed: false, aborted: how === 'cancelled', tokensSent: 0 }),
    cut: cutHook(state, tracker),
  });
  return new Response(body, {
    status: 200,
    headers: { ...headers, 'content-length': String(bytes.byteLength) },
  });
}

export interface SseDelivery {
  events: string[];
  terminal: string;
  headers: HeaderRecord;
  ttftMs: number;
  itlMs: number;
  fault: BodyFault;
  onSuccess?: () => void;
}

/**
 * Streams SSE events: the first at TTFT, then one every ITL; midstream cuts the connection, stall
 * stops sending, after the plan's cut point.
 */
export function deliverSse(state: SimState, tracker: RequestTracker, d: SseDelivery): Response {
  const headers = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    ...d.headers,
  };
  tracker.status = 200;
  state.counters.streamed_total++;
  if (d.fault === null && d.ttftMs <= 0 && d.itlMs <= 0) {
    // Zero-delay mode: one synchronous write, no timers.
    tracker.finish({ status: 200, completed: true, tokensSent: d.events.length });
    d.onSuccess?.();
    return new Response(d.events.join('') + d.terminal, { status: 200, headers });
  }
  const now = state.config.now ?? (() => performance.now());
  const body = timedBody({
    chunks: d.events,
    terminal: d.terminal,
    dueMs: (i) => d.ttftMs + i * d.itlMs,
    cutAfter: d.fault === null ? null : cutPoint(state.config.failure, d.events.length),
    stall: d.fault === 'stall',
    startMs: now(),
    now,
    sleep: state.config.sleep,
    signal: tracker.signal,
    onProgress: (sent) => tracker.note({ tokensSent: sent }),
    onEnd: (how, sent) => {
      tracker.finish({
        status: 200,
        completed: how === 'done',
        aborted: how === 'cancelled',
        tokensSent: sent,
      });
      if (how === 'done') d.onSuccess?.();
    },
    cut: cutHook(state, tracker),
  });
  return new Response(body, { status: 200, headers });
}

function cutHook(state: SimState, tracker: RequestTracker): (() => void) | undefined {
  const hook = state.config.cutConnection;
  return hook ? () => hook(tracker.c) : undefined;
}
