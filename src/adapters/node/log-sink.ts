/**
 * The log sink on Node: lines batched as core/observability/line-batch.ts says (one stdout write
 * per FLUSH_MS; the request's own log line was about 2 % of its CPU when written one by one).
 * What is pending is written when the process exits (stdout is synchronous on Linux for files,
 * pipes and terminals), so only a process killed outright (SIGKILL) can lose the last FLUSH_MS.
 */
import { lineBatch } from '../../core/observability/line-batch.ts';
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

export function batchedStdoutSink(stream: NodeJS.WritableStream = process.stdout): LogSink {
  const batch = lineBatch((text) => stream.write(text), unrefTimer);
  flushAtExit(batch.flush);
  return batch.sink;
}
