/**
 * The log sink on Deno: lines batched as core/observability/line-batch.ts says (one stdout write
 * per FLUSH_MS, not per line or per timer turn: under load a write per turn carried a few lines
 * each, and the timer, the encode and the write cost about 4 % of a request on Deno). What is
 * pending is written when the program exits (`unload`, which `Deno.exit` dispatches too) and by
 * `flush`, so the last lines (the drain message) are not lost. An uncaught error that ends the
 * program skips `unload`: up to FLUSH_MS of lines are lost then.
 */
import { FLUSH_MS, type LineBatch, lineBatch } from '../../core/observability/line-batch.ts';

const encoder = new TextEncoder();

function writeAll(bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

const unrefTimer = {
  arm: (fn: () => void, ms: number) => {
    const timer = setTimeout(fn, ms);
    Deno.unrefTimer(timer);
    return timer;
  },
  disarm: (timer: unknown) => clearTimeout(timer as ReturnType<typeof setTimeout>),
};

/** `write` takes each batch's bytes (stdout unless a test says otherwise). */
export function batchedStdoutSink(
  flushMs = FLUSH_MS,
  write: (bytes: Uint8Array) => void = writeAll,
): LineBatch {
  const batch = lineBatch(
    (text) => {
      try {
        write(encoder.encode(text));
      } catch {
        // stdout is gone (a closed pipe): logging must not take the router down.
      }
    },
    unrefTimer,
    flushMs,
  );
  globalThis.addEventListener('unload', batch.flush);
  return batch;
}
