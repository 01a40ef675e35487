/**
 * A log sink for Deno that batches lines into one stdout write per timer turn, and can be flushed
 * synchronously before `Deno.exit` so the last lines (the drain message) are not lost.
 */
import type { LogSink } from '../../core/observability/logger.ts';

export interface FlushableSink {
  sink: LogSink;
  /** Writes what is pending now. */
  flush(): void;
}

const encoder = new TextEncoder();

function writeAll(bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

export function batchedStdoutSink(): FlushableSink {
  let pending: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    try {
      writeAll(encoder.encode(`${lines.join('\n')}\n`));
    } catch {
      // stdout is gone (a closed pipe): logging must not take the router down.
    }
  };
  return {
    sink: (line) => {
      if (pending.length === 0) timer = setTimeout(flush, 0);
      pending.push(line);
    },
    flush,
  };
}
