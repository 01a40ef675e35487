/** The most recent latencies of one kind (a ring of fixed size), and their 95th percentile. */

const SIZE = 128;

export class LatencyWindow {
  private readonly values = new Float64Array(SIZE);
  private count = 0;
  private next = 0;
  private cached: number | undefined;

  add(ms: number): void {
    this.values[this.next] = ms;
    this.next = (this.next + 1) % SIZE;
    if (this.count < SIZE) this.count++;
    this.cached = undefined;
  }

  /** The 95th percentile of the window (0 while empty). */
  p95(): number {
    if (this.count === 0) return 0;
    if (this.cached !== undefined) return this.cached;
    const sorted = Array.from(this.values.subarray(0, this.count)).sort((a, b) => a - b);
    this.cached = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] as number;
    return this.cached;
  }
}
