/**
 * What the stream relay (src/core/routing/stream-relay.ts) costs per chunk, in process: STREAMS
 * streams of CHUNKS chunks each, from an engine reader whose every chunk comes on a later
 * microtask (as a socket's chunk does), through the relay and its per-chunk bookkeeping (clock
 * reading, first chunk, gaps, stall progress), to a consumer that reads as the Node host's pump does
 * (`pull`, a chunk handed on in the call that brought it), and, in alternate rounds, the same with
 * promises (`read().then(next)` at both ends, as before round 28 and as a Web stream's reader is
 * read). Prints the time per chunk of each of ROUNDS rounds per way, and their medians.
 *
 *   npm run bench:relay            # STREAMS=20000 CHUNKS=17 ROUNDS=7
 */
import { systemClock } from '../src/core/contracts/runtime.ts';
import type { ChunkReader, ChunkSource } from '../src/core/contracts/upstream.ts';
import { relaySource } from '../src/core/routing/stream-relay.ts';
import { median } from './overhead-interleave.ts';

const STREAMS = Number(process.env.STREAMS ?? 20_000);
const CHUNKS = Number(process.env.CHUNKS ?? 17);
const ROUNDS = Number(process.env.ROUNDS ?? 7);

type Read = ReadableStreamReadResult<Uint8Array>;
const chunk = new Uint8Array(120).fill(0x61);
const DONE: Read = { done: true, value: undefined };

/** An engine body of CHUNKS chunks, each delivered on a microtask after it was asked for. */
function engineBody(withPull: boolean): ChunkSource {
  let sent = 0;
  const pull = (onResult: (r: Read) => void) => {
    if (sent++ < CHUNKS) queueMicrotask(() => onResult({ done: false, value: chunk }));
    else onResult(DONE);
  };
  const reader: ChunkReader = {
    read: () => new Promise<Read>((resolve) => pull(resolve)),
    cancel: () => Promise.resolve(),
  };
  if (withPull) reader.pull = pull;
  return { getReader: () => reader, cancel: () => Promise.resolve() };
}

/** Reads a relayed body to its end the way the Node host's pump does: with `pull`, or with `read`. */
function drain(reader: ChunkReader, withPull: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const next = (r: Read): void => {
      if (r.done) resolve();
      else read();
    };
    const read = () => {
      if (withPull && reader.pull) reader.pull(next, reject);
      else reader.read().then(next, reject);
    };
    read();
  });
}

let progress = 0;
const options = {
  sse: true,
  clock: systemClock,
  onDone: () => {},
  onFirstChunk: () => {},
  onGap: () => {},
  onChunk: () => {
    progress++;
  },
};

async function round(withPull: boolean): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < STREAMS; i++) {
    await drain(relaySource(engineBody(withPull), options).getReader(), withPull);
  }
  return ((performance.now() - start) * 1000) / (STREAMS * CHUNKS);
}

const perChunk = { pull: [] as number[], read: [] as number[] };
await round(true); // warm-up
await round(false);
for (let r = 0; r < ROUNDS; r++) {
  perChunk.pull.push(await round(true));
  perChunk.read.push(await round(false));
}
for (const [way, runs] of Object.entries(perChunk)) {
  console.log(
    `${STREAMS} streams of ${CHUNKS} chunks through the relay with ${way}, µs per chunk by round: ${runs.map((v) => v.toFixed(3)).join(', ')}`,
  );
}
console.log(
  `median µs per chunk: pull ${median(perChunk.pull).toFixed(3)}, read ${median(perChunk.read).toFixed(3)} ` +
    `(${progress} chunks relayed)`,
);
