/**
 * Log lines batched into few writes: one write every FLUSH_MS, or at once when MAX_PENDING_BYTES
 * are waiting, instead of one per line. At thousands of requests per second that is one write for
 * dozens of lines (a write per line, or per event-loop turn, cost a few percent of a request). The
 * host supplies the write and a timer that does not keep the process alive, and writes what is
 * pending when the process exits.
 */
import type { LogSink } from './logger.ts';

/** Longest a line waits before it is written. */
export const FLUSH_MS = 20;
/** Pending text that is written at once, whatever the timer. */
export const MAX_PENDING_BYTES = 64 * 1024;

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

/** `write` gets each batch as text, its lines joined with a newline after each. */
export function lineBatch(write: (text: string) => void, timer: BatchTimer, flushMs = FLUSH_MS): LineBatch {
  let pending: string[] = [];
  let size = 0;
  let handle: unknown;
  const flush = () => {
    if (handle !== undefined) timer.disarm(handle);
    handle = undefined;
    if (pending.length === 0) return;
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
