/**
 * Bounded `model` label values, so a client can never mint a series: a model the fleet serves keeps
 * its name, any other is `other`, and a request that named none gets an empty value. The served
 * names come from the fleet's `models()`, read again when a name misses (at most once a second) and
 * every 30 s; a fleet behind RPC (Workers) answers later, and its answer counts from then on (asked
 * when a request starts, it has usually answered by the time the request is labelled, at its end). At
 * most MAX_MODEL_LABELS names keep their own series (a fleet of many LoRA adapters: the rest are
 * `other`).
 */
import type { MaybePromise } from '../contracts/fleet-api.ts';

export const OTHER_MODEL = 'other';
export const MAX_MODEL_LABELS = 256;
const MISS_REFRESH_MS = 1000;
const REFRESH_MS = 30_000;

export class ModelLabels {
  private served: ReadonlySet<string> = new Set();
  private refreshedAt = Number.NEGATIVE_INFINITY;
  private pending = false;

  constructor(private readonly models: () => MaybePromise<string[]>) {}

  /**
   * Reads the served names again if they are stale for this model, without labelling anything:
   * called when a request starts, so that a fleet behind RPC has answered by the time it ends.
   */
  warm(model: string | undefined, now: number): void {
    if (model === undefined) return;
    const age = now - this.refreshedAt;
    if (age >= REFRESH_MS || (age >= MISS_REFRESH_MS && !this.served.has(model))) this.refresh(now);
  }

  /** The label for a requested model; `now` is the caller's monotonic clock reading (ms). */
  label(model: string | undefined, now: number): string {
    if (model === undefined || model === '') return '';
    this.warm(model, now);
    return this.served.has(model) ? model : OTHER_MODEL;
  }

  private refresh(now: number): void {
    if (this.pending) return;
    this.refreshedAt = now;
    let listed: MaybePromise<string[]>;
    try {
      listed = this.models();
    } catch {
      return;
    }
    if (Array.isArray(listed)) {
      this.take(listed);
      return;
    }
    this.pending = true;
    Promise.resolve(listed)
      .then(
        (names) => this.take(names),
        () => {},
      )
      .finally(() => {
        this.pending = false;
      });
  }

  private take(names: readonly string[]): void {
    this.served = new Set(names.length > MAX_MODEL_LABELS ? names.slice(0, MAX_MODEL_LABELS) : names);
  }
}
