/**
 * The Node host's `Reports` (core/contracts/runtime.ts): a finished request's report (its metrics,
 * observers and log line) runs after the I/O turn that finished it, with the rest of that turn's,
 * in one `setImmediate`. An answer is written as soon as the engine's is in; when one turn brings
 * several engines' answers, they go to their clients back to back, and the bookkeeping of all of
 * them follows. Done in between, it spaced the writes out, so the client side was woken for each
 * (docs/benchmarks.md, round 27). Timers cannot fire between an answer and its report: Node runs
 * `setImmediate` callbacks right after the I/O callbacks of the same turn.
 */
import type { Reportable, Reports } from '../../core/contracts/runtime.ts';

export interface TurnReports extends Reports {
  /** Runs what is queued now (the queued `setImmediate` then finds nothing to do). */
  flush(): void;
}

/**
 * A report that throws is handed to `onError`; the others of its turn still run, even when
 * `onError` throws too (nothing may escape a `setImmediate`: the process would end).
 */
export function turnReports(onError: (err: unknown) => void): TurnReports {
  let queued: Reportable[] = [];
  const flush = () => {
    const batch = queued;
    queued = [];
    for (const item of batch) {
      try {
        item.report();
      } catch (err) {
        try {
          onError(err);
        } catch {
          // the error's own report failed (the log sink): the other reports still run
        }
      }
    }
  };
  return {
    add(item) {
      if (queued.push(item) === 1) setImmediate(flush);
    },
    flush,
  };
}
