// Mutable state of one simulated engine: options, counters, prefix cache, scheduler slots, logs,
// and the per-request tracker that settles each request exactly once.
import type { Context } from 'hono';
import { PrefixCache } from './cache.ts';
import { KvTransfers } from './kv-transfer.ts';
import { nowMs, RequestLog } from './log.ts';
import { createFailurePlanner, type FailurePlanner } from './plan.ts';
import type { SimLogEntry, SimOptions } from './types.ts';

export interface Counters {
  requests_total: number;
  success_total: number;
  failed_injected_total: number;
  aborted_total: number;
  prompt_tokens_total: number;
  generation_tokens_total: number;
  streamed_total: number;
  health_probes_total: number;
}

const zeroCounters = (): Counters => ({
  requests_total: 0,
  success_total: 0,
  failed_injected_total: 0,
  aborted_total: 0,
  prompt_tokens_total: 0,
  generation_tokens_total: 0,
  streamed_total: 0,
  health_probes_total: 0,
});

/** Running/waiting accounting like vLLM's scheduler: at most `max()` requests run at once. */
export class Slots {
  running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(private readonly max: () => number) {}

  get waiting(): number {
    return this.queue.length;
  }

  /** True when running at once; else resolves true once running, false if the signal aborted first. */
  acquire(signalOf: () => AbortSignal): Promise<boolean> | true {
    const max = this.max();
    if (max <= 0 || (this.running < max && this.queue.length === 0)) {
      this.running++;
      return true;
    }
    const signal = signalOf();
    return new Promise<boolean>((resolve) => {
      const grant = () => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      };
      const onAbort = () => {
        const i = this.queue.indexOf(grant);
        if (i >= 0) this.queue.splice(i, 1);
        resolve(false);
      };
      this.queue.push(grant);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): void {
    this.running--;
    this.drain();
  }

  /** Starts waiting requests while there is room (also after `max` grows). */
  drain(): void {
    const max = this.max();
    while (this.queue.length > 0 && (max <= 0 || this.running < max)) {
      this.running++;
      this.queue.shift()!();
    }
  }
}

export interface SimState {
  config: SimOptions;
  counters: Counters;
  cache: PrefixCache;
  slots: Slots;
  log: RequestLog;
  planner: FailurePlanner;
  startedAtSec: number;
  /** Mooncake transfers this engine prefilled (kv-transfer.ts). */
  kv: KvTransfers;
  /** Bootstrap `/query` requests since the start, the last reset or a new `queryFailFirst`. */
  queries: number;
  nextId(prefix: string): string;
}

export function createState(config: SimOptions): SimState {
  let seq = 0;
  const state: SimState = {
    config,
    counters: zeroCounters(),
    cache: new PrefixCache(config.cacheBlocks, config.blockChars),
    slots: new Slots(() => state.config.maxRunning),
    log: new RequestLog(() => state.config.logSize),
    planner: createFailurePlanner(config.failure, config.seed),
    startedAtSec: Math.floor(Date.now() / 1000),
    kv: new KvTransfers(),
    queries: 0,
    nextId: (prefix) => `${prefix}-${state.config.id}-${(++seq).toString(36)}`,
  };
  return state;
}

export function resetState(state: SimState): void {
  state.counters = zeroCounters();
  state.cache.clear();
  state.cache.resetCounters();
  state.kv.clear();
  state.queries = 0;
  state.log.clear();
  state.planner = createFailurePlanner(state.config.failure, state.config.seed);
}

export interface Outcome {
  status?: number | null;
  completed: boolean;
  aborted?: boolean;
  tokensSent?: number;
}

/** The abort reason of a settled request (made once: building a DOMException per request costs). */
const SETTLED = new Error('sim: request settled');

/**
 * One request's lifetime. `signal` aborts when the client goes away (request signal, or the
 * response stream is cancelled) or when the request is settled, so pending sleeps stop. The signal
 * and the client subscription are made on first use: zero-delay answers never need them.
 */
export class RequestTracker {
  private controller: AbortController | undefined;
  private subscribed: AbortSignal | undefined;
  private ended = false;
  private holdsSlot = false;
  status: number | null = null;

  constructor(
    private readonly state: SimState,
    readonly c: Context,
    readonly entry: SimLogEntry | null,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.ended) this.controller.abort(SETTLED);
      else {
        const client = this.c.req.raw.signal;
        if (client.aborted) queueMicrotask(this.clientGone);
        else {
          client.addEventListener('abort', this.clientGone, { once: true });
          this.subscribed = client;
        }
      }
    }
    return this.controller.signal;
  }

  get done(): boolean {
    return this.ended;
  }

  /** Takes a running slot; false if the client left while waiting. */
  async run(): Promise<boolean> {
    const got = this.state.slots.acquire(() => this.signal);
    const ok = got === true ? true : await got;
    if (ok && this.ended) this.state.slots.release();
    else if (ok) this.holdsSlot = true;
    return ok && !this.ended;
  }

  readonly clientGone = (): void => {
    if (this.ended) return;
    this.finish({ completed: false, aborted: true, status: this.status });
  };

  finish(outcome: Outcome): void {
    if (this.ended) return;
    this.ended = true;
    this.subscribed?.removeEventListener('abort', this.clientGone);
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.state.slots.release();
    }
    if (outcome.aborted) this.state.counters.aborted_total++;
    const status = outcome.status === undefined ? this.status : outcome.status;
    this.state.log.update(this.entry, {
      status,
      completed: outcome.completed,
      aborted: outcome.aborted ?? false,
      tEndMs: nowMs(),
      tokensSent: outcome.tokensSent ?? this.entry?.tokensSent ?? 0,
    });
    this.controller?.abort(SETTLED);
  }

  /** Records progress without settling. */
  note(patch: Partial<SimLogEntry>): void {
    this.state.log.update(this.entry, patch);
  }
}
