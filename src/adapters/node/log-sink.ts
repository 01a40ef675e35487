/**
 * A log sink that batches lines: one stdout write every FLUSH_MS (or once MAX_PENDING_BYTES are
 * waiting), instead of one per line. At thousands of requests per second that is one write for
 * dozens of lines rather than a write each (the request's own log line was about 2 % of its CPU).
 * What is pending is written when the process exits (stdout is synchronous on Linux for files,
 * pipes and terminals), so only a process killed outright (SIGKILL) can lose the last FLUSH_MS.
 */
import type { LogSink } from '../../core/observability/logger.ts';

/** Longest a line waits before it is written. */
export const FLUSH_MS = 20;
/** Pending text that is written at once, whatever the timer. */
const MAX_PENDING_BYTES = 64 * 1024;

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

export function batchedStdoutSink(stream: NodeJS.WritableStream = process.stdout): LogSink {
  let pending: string[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    size = 0;
    stream.write(`${lines.join('\n')}\n`);
  };
  flushAtExit(flush);
  return (line) => {
    pending.push(line);
    size += line.length;
    if (size >= MAX_PENDING_BYTES) flush();
    else if (timer === undefined) {
      timer = setTimeout(flush, FLUSH_MS);
      timer.unref();
    }
  };
}
