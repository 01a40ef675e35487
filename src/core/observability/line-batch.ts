/**
 * Log lines batched into few writes: one write every FLUSH_MS, or at once when MAX_PENDING_BYTES
 * are waiting, instead of one per line. At thousands of requests per second that is one write for
 * dozens of lines (a write per line, or per event-loop turn, cost a few percent of a request). The
 * host supplies the write and a timer that does not keep the process alive, and writes what is
 * pending when the process exits.
 *
 * A host whose writes queue when nobody reads them (Node's stdout on a pipe) also tells how much
 * is queued: past MAX_BACKLOG_BYTES a batch is dropped and counted instead of written, so a log
 * reader that stalls costs lines, not the router's memory. The first batch written after such a
 * gap carries the report of what was dropped (`BacklogReport.resumed`).
 */
import type { Logger, LogSink } from './logger.ts';
import type { MetricsRegistry } from './metrics.ts';

/** Longest a line waits before it is written. */
export const FLUSH_MS = 20;
/** Pending text that is written at once, whatever the timer. */
export const MAX_PENDING_BYTES = 64 * 1024;
/** Bytes queued by the host's writer and not yet taken by its reader, past which batches are dropped. */
export const MAX_BACKLOG_BYTES = 8 * 1024 * 1024;

export interface LineBatch {
  sink: LogSink;
  /** Writes what is pending now. */
  flush(): void;
}

export interface BatchTimer {
  /** Runs `fn` once after `ms`; the timer must not keep the process running. */
  arm(fn: () => void, ms: number): unknown;
  disarm(handle: unknown): void;
}

/** Who hears of dropped batches: each as it is dropped, and the gap's total once writing resumes. */
export interface BacklogReport {
  dropped(lines: number): void;
  /** Called before the first batch written after a gap; a line it logs goes out with that batch. */
  resumed(lines: number): void;
}

export interface Backlog {
  /** Bytes the host's writer holds that its reader has not taken yet. */
  bytes(): number;
  /** Past this many, batches are dropped (default MAX_BACKLOG_BYTES). */
  limit?: number;
  /** Read at each drop and resume: the router sets it once it has a logger and metrics. */
  report?: BacklogReport;
}

/** `write` gets each batch as text, its lines joined with a newline after each. */
export function lineBatch(
  write: (text: string) => void,
  timer: BatchTimer,
  flushMs = FLUSH_MS,
  backlog?: Backlog,
): LineBatch {
  let pending: string[] = [];
  let size = 0;
  let handle: unknown;
  let dropped = 0;
  const limit = backlog?.limit ?? MAX_BACKLOG_BYTES;
  const flush = () => {
    if (handle !== undefined) timer.disarm(handle);
    handle = undefined;
    if (pending.length === 0) return;
    if (backlog !== undefined) {
      if (backlog.bytes() > limit) {
        const lines = pending.length;
        pending = [];
        size = 0;
        dropped += lines;
        backlog.report?.dropped(lines);
        return;
      }
      if (dropped > 0) {
        const lines = dropped;
        dropped = 0;
        backlog.report?.resumed(lines);
      }
    }
    const lines = pending;
    pending = [];
    size = 0;
    write(`${lines.join('\n')}\n`);
  };
  const sink: LogSink = (line) => {
    pending.push(line);
    size += line.length;
    if (size >= MAX_PENDING_BYTES) flush();
    else if (handle === undefined) handle = timer.arm(flush, flushMs);
  };
  return { sink, flush };
}

/**
 * The router's report of dropped log lines: the counter `vllm_router_log_lines_dropped_total`
 * as they are dropped, and one warning when writing resumes.
 */
export function backlogReport(logger: Logger, metrics: MetricsRegistry): BacklogReport {
  const counter = metrics.counter(
    'vllm_router_log_lines_dropped_total',
    'Log lines dropped because the log output was not being read',
  );
  counter.inc(0); // on the page from the start, at 0
  return {
    dropped: (lines) => counter.inc(lines),
    resumed: (lines) => logger.warn('log lines dropped: the log output was not read fast enough', { lines }),
  };
}

/** What `routerBacklog.reportToRouter` needs of the router. */
export interface ReportingRouter {
  logger: Logger;
  metrics: MetricsRegistry;
}

export interface RouterBacklog extends Backlog {
  /** Reports dropped batches with the router's counter and warning (`backlogReport`) from now on. */
  reportToRouter(router: ReportingRouter): void;
}

/** A host's backlog whose report is set once the router (its logger and metrics) exists. */
export function routerBacklog(bytes: () => number, limit = MAX_BACKLOG_BYTES): RouterBacklog {
  const backlog: RouterBacklog = {
    bytes,
    limit,
    reportToRouter: ({ logger, metrics }) => {
      backlog.report = backlogReport(logger, metrics);
    },
  };
  return backlog;
}
