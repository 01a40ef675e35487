/**
 * The log sink on Deno: lines batched as core/observability/line-batch.ts says (one stdout write
 * per FLUSH_MS, not per line or per timer turn: under load a write per turn carried a few lines
 * each, and the timer, the encode and the write cost about 4 % of a request on Deno).
 *
 * Batches are written without blocking (`StdoutQueue`): a synchronous write to a pipe whose reader
 * stalls would stop the whole router, `/health` included. What the reader has not taken stays
 * queued, at most MAX_BACKLOG_BYTES of it: past that, batches are dropped and counted
 * (line-batch.ts). Before an exit the command waits up to a second for the queue to empty
 * (`settle`); at the exit itself (`unload`, which `Deno.exit` dispatches too) what is still pending
 * is written synchronously when nothing else waits, so the last lines (the drain message) are not
 * lost, and dropped when the reader is behind, so a stalled reader cannot hold the exit. An uncaught
 * error that ends the program skips `unload`: up to FLUSH_MS of lines are lost then.
 */
import {
  FLUSH_MS,
  lineBatch,
  type ReportingRouter,
  routerBacklog,
} from '../../core/observability/line-batch.ts';
import type { LogSink } from '../../core/observability/logger.ts';

const encoder = new TextEncoder();

/** Where the bytes go: stdout, or a test's recorder. */
export interface ByteWriter {
  /** Resolves with how many bytes were taken (maybe fewer than given). */
  write(bytes: Uint8Array): Promise<number>;
  writeSync(bytes: Uint8Array): number;
}

const stdout: ByteWriter = {
  write: (bytes) => Deno.stdout.write(bytes),
  writeSync: (bytes) => Deno.stdout.writeSync(bytes),
};

/** Chunks written one after the other without blocking; `bytes()` is what is not written yet. */
class StdoutQueue {
  private chunks: Uint8Array[] = [];
  private queued = 0;
  private writing = false;
  /** Set at the exit: from then on a chunk is written at once when nothing waits, else dropped. */
  exiting = false;

  constructor(private readonly out: ByteWriter) {}

  bytes(): number {
    return this.queued;
  }

  push(bytes: Uint8Array): void {
    if (this.exiting) {
      this.writeNow(bytes);
      return;
    }
    this.chunks.push(bytes);
    this.queued += bytes.length;
    if (!this.writing) void this.pump();
  }

  private writeNow(bytes: Uint8Array): void {
    if (this.writing || this.chunks.length > 0) return; // the reader is behind: do not wait for it
    try {
      let offset = 0;
      while (offset < bytes.length) offset += this.out.writeSync(bytes.subarray(offset));
    } catch {
      // stdout is gone
    }
  }

  /** Resolves once nothing waits to be written, or after `ms`. */
  async settle(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (this.queued > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  private async pump(): Promise<void> {
    this.writing = true;
    try {
      for (let chunk = this.chunks[0]; chunk !== undefined; chunk = this.chunks[0]) {
        const taken = await this.out.write(chunk);
        this.queued -= taken;
        if (taken < chunk.length) this.chunks[0] = chunk.subarray(taken);
        else this.chunks.shift();
      }
    } catch {
      // stdout is gone (a closed pipe): logging must not take the router down
      this.chunks = [];
      this.queued = 0;
    } finally {
      this.writing = false;
    }
  }
}

const unrefTimer = {
  arm: (fn: () => void, ms: number) => {
    const timer = setTimeout(fn, ms);
    Deno.unrefTimer(timer);
    return timer;
  },
  disarm: (timer: unknown) => clearTimeout(timer as ReturnType<typeof setTimeout>),
};

export interface StdoutLog {
  sink: LogSink;
  /** Hands what is pending to the writer now. */
  flush(): void;
  /** Hands over what is pending, then resolves once it is written or after `ms` (before an exit). */
  settle(ms: number): Promise<void>;
  /** Reports dropped batches with the router's counter and warning (line-batch.ts, `backlogReport`). */
  reportToRouter(router: ReportingRouter): void;
}

export interface StdoutLogOptions {
  flushMs?: number;
  /** Bytes queued unwritten past which batches are dropped (default MAX_BACKLOG_BYTES). */
  maxBacklogBytes?: number;
  /** Where the bytes go (default stdout). */
  out?: ByteWriter;
}

export function batchedStdoutSink(options: StdoutLogOptions = {}): StdoutLog {
  const queue = new StdoutQueue(options.out ?? stdout);
  const backlog = routerBacklog(() => queue.bytes(), options.maxBacklogBytes);
  const write = (text: string) => queue.push(encoder.encode(text));
  const batch = lineBatch(write, unrefTimer, options.flushMs ?? FLUSH_MS, backlog);
  globalThis.addEventListener('unload', () => {
    queue.exiting = true;
    batch.flush();
  });
  return {
    sink: batch.sink,
    flush: batch.flush,
    settle: (ms) => {
      batch.flush();
      return queue.settle(ms);
    },
    reportToRouter: backlog.reportToRouter,
  };
}
