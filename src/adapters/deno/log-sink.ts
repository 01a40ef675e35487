/**
 * A log sink for Deno that batches lines: one stdout write every FLUSH_MS (or once
 * MAX_PENDING_BYTES are waiting), as the Node sink does, instead of one per timer turn. Under load
 * a write per turn carried a few lines each, and the timer, the encode and the write cost about
 * 4 % of a request on Deno. What is pending is written when the program exits (`unload`, which
 * `Deno.exit` dispatches too) and by `flush`, so the last lines (the drain message) are not lost.
 * An uncaught error that ends the program skips `unload`: up to FLUSH_MS of lines are lost then.
 */
import type { LogSink } from '../../core/observability/logger.ts';

export interface FlushableSink {
  sink: LogSink;
  /** Writes what is pending now. */
  flush(): void;
}

/** Longest a line waits before it is written. */
export const FLUSH_MS = 20;
/** Pending text that is written at once, whatever the timer. */
const MAX_PENDING_BYTES = 64 * 1024;

const encoder = new TextEncoder();

function writeAll(bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

/** `write` takes each batch's bytes (stdout unless a test says otherwise). */
export function batchedStdoutSink(
  flushMs = FLUSH_MS,
  write: (bytes: Uint8Array) => void = writeAll,
): FlushableSink {
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
    try {
      write(encoder.encode(`${lines.join('\n')}\n`));
    } catch {
      // stdout is gone (a closed pipe): logging must not take the router down.
    }
  };
  globalThis.addEventListener('unload', flush);
  return {
    sink: (line) => {
      pending.push(line);
      size += line.length;
      if (size >= MAX_PENDING_BYTES) flush();
      else if (timer === undefined) {
        const next = setTimeout(flush, flushMs);
        // A pending line alone must not keep the program running.
        Deno.unrefTimer(next);
        timer = next;
      }
    },
    flush,
  };
}
