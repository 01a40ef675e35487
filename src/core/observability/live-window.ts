/**
 * One series of request statistics over a sliding window (the live fleet page): a ring of
 * per-second slots, each with a request count, an error count and two log-scale histograms
 * (latency, time to first token). Memory is bounded: `windowSecs` slots, each histogram a fixed
 * array of BINS counters, allocated only for a slot that got a sample and reused as the ring turns.
 *
 * Quantiles come from the histograms: bins are 2^(1/4) wide (about 19 %), a quantile is
 * interpolated inside its bin and clamped to the smallest and largest value seen in the window,
 * so a window of one sample reports that sample exactly.
 */

/** Bins per octave, and bins in all: 0.1 ms × 2^(BINS / STEPS) is about 55 minutes. */
const STEPS = 4;
const BINS = 100;
const FLOOR_MS = 0.1;

const binOf = (ms: number) =>
  ms <= FLOOR_MS ? 0 : Math.min(BINS - 1, Math.floor(Math.log2(ms / FLOOR_MS) * STEPS));
const lowerEdge = (bin: number) => (bin === 0 ? 0 : FLOOR_MS * 2 ** (bin / STEPS));
const upperEdge = (bin: number) => FLOOR_MS * 2 ** ((bin + 1) / STEPS);

/** A histogram of one slot; `bins` is allocated on the first sample. */
class Dist {
  bins: Uint32Array | undefined;
  n = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;

  add(ms: number): void {
    this.bins ??= new Uint32Array(BINS);
    this.bins[binOf(ms)]! += 1;
    this.n++;
    if (ms < this.min) this.min = ms;
    if (ms > this.max) this.max = ms;
  }

  clear(): void {
    this.bins?.fill(0);
    this.n = 0;
    this.min = Number.POSITIVE_INFINITY;
    this.max = Number.NEGATIVE_INFINITY;
  }
}

interface Slot {
  /** The second (clock ms / 1000, floored) this slot holds; -1 when unused. */
  second: number;
  count: number;
  errors: number;
  latency: Dist;
  ttft: Dist;
}

export interface Quantiles {
  p50: number;
  p99: number;
}

export interface WindowStats {
  /** Requests finished within the window. */
  requests: number;
  requests_per_sec: number;
  /** Errors / requests; null without requests. */
  error_rate: number | null;
  latency_ms: Quantiles | null;
  /** Streams only; null when none finished in the window. */
  ttft_ms: Quantiles | null;
}

export interface Sample {
  /** Monotonic clock ms when the request finished. */
  at: number;
  latencyMs: number;
  ttftMs?: number;
  error: boolean;
}

/** Quantiles of the merged bins, or null without samples. */
function quantiles(bins: Float64Array, n: number, min: number, max: number): Quantiles | null {
  if (n === 0) return null;
  const at = (q: number) => {
    const rank = Math.max(1, Math.ceil(q * n));
    let seen = 0;
    for (let bin = 0; bin < BINS; bin++) {
      const inBin = bins[bin]!;
      if (seen + inBin >= rank) {
        const lo = lowerEdge(bin);
        const hi = upperEdge(bin);
        const value = lo + (hi - lo) * ((rank - seen) / inBin);
        return Math.min(max, Math.max(min, value));
      }
      seen += inBin;
    }
    return max;
  };
  return { p50: at(0.5), p99: at(0.99) };
}

export class WindowSeries {
  private readonly slots: Slot[];
  /** Monotonic ms of the last sample (pruning idle series). */
  lastAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly windowSecs: number) {
    this.slots = Array.from({ length: windowSecs }, () => ({
      second: -1,
      count: 0,
      errors: 0,
      latency: new Dist(),
      ttft: new Dist(),
    }));
  }

  record(sample: Sample): void {
    const second = Math.floor(sample.at / 1000);
    const slot = this.slots[((second % this.windowSecs) + this.windowSecs) % this.windowSecs]!;
    if (slot.second !== second) {
      slot.second = second;
      slot.count = 0;
      slot.errors = 0;
      slot.latency.clear();
      slot.ttft.clear();
    }
    slot.count++;
    if (sample.error) slot.errors++;
    slot.latency.add(sample.latencyMs);
    if (sample.ttftMs !== undefined) slot.ttft.add(sample.ttftMs);
    if (sample.at > this.lastAt) this.lastAt = sample.at;
  }

  /** The window ending at monotonic `now`; rates are per `spanSecs` (less than the window at startup). */
  read(now: number, spanSecs: number): WindowStats {
    const current = Math.floor(now / 1000);
    let requests = 0;
    let errors = 0;
    const latency = { bins: new Float64Array(BINS), n: 0, min: Infinity, max: -Infinity };
    const ttft = { bins: new Float64Array(BINS), n: 0, min: Infinity, max: -Infinity };
    const merge = (into: typeof latency, d: Dist) => {
      if (d.n === 0 || !d.bins) return;
      for (let i = 0; i < BINS; i++) into.bins[i]! += d.bins[i]!;
      into.n += d.n;
      into.min = Math.min(into.min, d.min);
      into.max = Math.max(into.max, d.max);
    };
    for (const slot of this.slots) {
      if (slot.second < 0 || slot.second > current || slot.second <= current - this.windowSecs) continue;
      requests += slot.count;
      errors += slot.errors;
      merge(latency, slot.latency);
      merge(ttft, slot.ttft);
    }
    return {
      requests,
      requests_per_sec: requests / Math.max(1, Math.min(this.windowSecs, spanSecs)),
      error_rate: requests === 0 ? null : errors / requests,
      latency_ms: quantiles(latency.bins, latency.n, latency.min, latency.max),
      ttft_ms: quantiles(ttft.bins, ttft.n, ttft.min, ttft.max),
    };
  }
}
