// Response bodies that honour time: each chunk is handed over when its time comes, and a midstream
// failure cuts the connection after a given number of chunks (a stall stops sending instead).
import { waitForAbort } from './respond.ts';
import type { SimSleep } from './types.ts';

const encoder = new TextEncoder();

export interface TimedBodyOptions {
  /** Body chunks (SSE events, or slices of a JSON body). */
  chunks: ReadonlyArray<string | Uint8Array>;
  /** When chunk i is due, in ms after `startMs`. */
  dueMs: (i: number) => number;
  /** Sent right after the last chunk (e.g. the usage event and `data: [DONE]`). */
  terminal?: string;
  /** Cut after this many chunks instead of finishing (midstream failure); null = no cut. */
  cutAfter: number | null;
  /** At `cutAfter`, stall (send nothing more until the reader goes away) instead of cutting. */
  stall?: boolean;
  startMs: number;
  now: () => number;
  sleep: SimSleep;
  /** Aborts when the request is settled or the client left. */
  signal: AbortSignal;
  /** Called with the number of chunks handed over so far. */
  onProgress(sent: number): void;
  /** Called once: 'done' (all sent), 'cut' (midstream), 'cancelled' (the reader went away). */
  onEnd(how: 'done' | 'cut' | 'cancelled', sent: number): void;
  /** Cuts the connection (after what was handed over is flushed); without it the stream errors. */
  cut?: () => void;
}

/**
 * A pull-based body (no read-ahead: a chunk is produced only when the reader asks and its time has
 * come). Chunks that are already due are coalesced into one write.
 */
export function timedBody(o: TimedBodyOptions): ReadableStream<Uint8Array> {
  let sent = 0;
  let ended = false;
  const limit = o.cutAfter === null ? o.chunks.length : Math.min(o.cutAfter, o.chunks.length);
  const end = (how: 'done' | 'cut' | 'cancelled') => {
    if (ended) return false;
    ended = true;
    o.onEnd(how, sent);
    return true;
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (ended) return;
        if (sent >= limit) {
          if (o.cutAfter !== null && o.stall) {
            // Nothing more, ever: the reader's cancel (or the request's abort) settles it.
            await waitForAbort(o.signal);
            end('cancelled');
            return;
          }
          if (o.cutAfter !== null) {
            end('cut');
            if (o.cut) o.cut();
            else controller.error(new TypeError('terminated: simulated midstream cut'));
            return;
          }
          controller.enqueue(encoder.encode(o.terminal ?? ''));
          controller.close();
          end('done');
          return;
        }
        const wait = o.startMs + o.dueMs(sent) - o.now();
        if (wait > 0) await o.sleep(wait, o.signal);
        if (ended || o.signal.aborted) return;
        const parts: Array<string | Uint8Array> = [];
        do parts.push(o.chunks[sent++]!);
        while (sent < limit && o.startMs + o.dueMs(sent) - o.now() <= 0);
        if (sent === o.chunks.length && o.cutAfter === null) {
          if (o.terminal) parts.push(o.terminal);
          controller.enqueue(concat(parts));
          controller.close();
          o.onProgress(sent);
          end('done');
          return;
        }
        controller.enqueue(concat(parts));
        o.onProgress(sent);
      },
      cancel() {
        end('cancelled');
      },
    },
    { highWaterMark: 0 },
  );
}

function concat(parts: Array<string | Uint8Array>): Uint8Array {
  if (parts.length === 1) {
    const p = parts[0]!;
    return typeof p === 'string' ? encoder.encode(p) : p;
  }
  if (parts.every((p) => typeof p === 'string')) return encoder.encode(parts.join(''));
  const bytes = parts.map((p) => (typeof p === 'string' ? encoder.encode(p) : p));
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.byteLength, 0));
  let at = 0;
  for (const b of bytes) {
    out.set(b, at);
    at += b.byteLength;
  }
  return out;
}
