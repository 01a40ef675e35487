/**
 * "The least-loaded worker", decided the same way everywhere: the lowest (score, in-flight load,
 * processed count), and among exact ties a rotating cursor, never "the first worker" (which would
 * pile every tie onto one engine).
 */
import type { PolicyWorker } from './policy.ts';

export type Score<W> = (w: W) => number;

function compare<W extends PolicyWorker>(a: W, b: W, score: Score<W> | undefined): number {
  if (score) {
    const d = score(a) - score(b);
    if (d !== 0) return d;
  }
  return a.load - b.load || a.processed - b.processed;
}

export class TieBreaker {
  private cursor: number;

  /**
   * `start`: where the cursor begins. Router replicas sharing a store start it at random (see
   * `tieBreakerFor`): replicas started together would otherwise break every tie alike and send
   * their first choices to the same engines.
   */
  constructor(private readonly start = 0) {
    this.cursor = start;
  }

  /**
   * The least candidate by (score, load, processed); exact ties rotate. `candidates` must be
   * non-empty. Without `score` this is the plain least-loaded worker.
   */
  pick<W extends PolicyWorker>(candidates: readonly W[], score?: Score<W>): W {
    let best = candidates[0] as W;
    let ties = 1;
    for (let i = 1; i < candidates.length; i++) {
      const w = candidates[i] as W;
      const d = compare(w, best, score);
      if (d < 0) {
        best = w;
        ties = 1;
      } else if (d === 0) {
        ties++;
      }
    }
    if (ties === 1) return best;
    let nth = this.cursor % ties;
    this.cursor = (this.cursor + 1) % 0x40000000;
    for (const w of candidates) {
      if (compare(w, best, score) === 0 && nth-- === 0) return w;
    }
    return best;
  }

  /** The lesser of two workers by (load, processed); exact ties alternate. */
  lesser<W extends PolicyWorker>(a: W, b: W): W {
    const d = compare(a, b, undefined);
    if (d !== 0) return d < 0 ? a : b;
    this.cursor = (this.cursor + 1) % 0x40000000;
    return this.cursor % 2 === 0 ? a : b;
  }

  reset(): void {
    this.cursor = this.start;
  }
}

/** A policy's tie-breaker: from 0 alone, at a random place when the router is one of several replicas. */
export function tieBreakerFor(ctx: { sharing?: unknown; random: () => number }): TieBreaker {
  return new TieBreaker(ctx.sharing === undefined ? 0 : Math.floor(ctx.random() * 0x40000000));
}
