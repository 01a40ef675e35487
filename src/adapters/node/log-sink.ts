/**
 * The log sink on Node: lines batched as core/observability/line-batch.ts says (one stdout write
 * per FLUSH_MS; the request's own log line was about 2 % of its CPU when written one by one).
 * What is pending is written when the process exits (stdout is synchronous on Linux for files
 * and terminals), so only a process killed outright (SIGKILL) can lose the last FLUSH_MS.
 *
 * On a pipe Node queues what the reader has not taken yet: a reader that stalls (a log shipper
 * that hangs) would grow that queue without end, so past MAX_BACKLOG_BYTES queued the batches are
 * dropped and counted (line-batch.ts) until the reader catches up.
 */
import {
  type BacklogReport,
  lineBatch,
  type ReportingRouter,
  routerBacklog,
} from '../../core/observability/line-batch.ts';
import type { LogSink } from '../../core/observability/logger.ts';

/** Every sink's flush, run once when the process exits. */
const flushes = new Set<() => void>();
let exitHooked = false;

function flushAtExit(flush: () => void): void {
  flushes.add(flush);
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => {
    for (const f of flushes) f();
  });
}

const unrefTimer = {
  arm: (fn: () => void, ms: number) => setTimeout(fn, ms).unref(),
  disarm: (timer: unknown) => clearTimeout(timer as NodeJS.Timeout),
};

export interface StdoutLog {
  sink: LogSink;
  /** Writes what is pending now. */
  flush(): void;
  /** Where dropped batches are reported from now on. */
  reportTo(report: BacklogReport): void;
  /** Reports them with the router's counter and warning (line-batch.ts, `backlogReport`). */
  reportToRouter(router: ReportingRouter): void;
}

export interface StdoutLogOptions {
  /** Bytes queued unread past which batches are dropped (default MAX_BACKLOG_BYTES). */
  maxBacklogBytes?: number;
  flushMs?: number;
}

export function batchedStdoutSink(
  stream: NodeJS.WritableStream & { readonly writableLength?: number } = process.stdout,
  options: StdoutLogOptions = {},
): StdoutLog {
  const backlog = routerBacklog(() => stream.writableLength ?? 0, options.maxBacklogBytes);
  const batch = lineBatch((text) => stream.write(text), unrefTimer, options.flushMs, backlog);
  flushAtExit(batch.flush);
  return {
    sink: batch.sink,
    flush: batch.flush,
    reportTo: (report) => {
      backlog.report = report;
    },
    reportToRouter: backlog.reportToRouter,
  };
}
