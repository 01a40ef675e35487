/**
 * What the stream relay (src/core/routing/stream-relay.ts) costs per chunk, in process: STREAMS
 * streams of CHUNKS chunks each, from an engine reader whose every read resolves on a later
 * microtask (as a socket's chunk does), through the relay and its per-chunk bookkeeping (clock
 * reading, first chunk, gaps, stall progress), to a consumer that reads as the Node host's pump does
 * (`read().then(next)`). Prints the time per chunk of each of ROUNDS rounds, and their median.
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
function engineBody(): ChunkSource {
  let sent = 0;
  const reader: ChunkReader = {
    read: () =>
      sent++ < CHUNKS
        ? new Promise<Read>((resolve) => queueMicrotask(() => resolve({ done: false, value: chunk })))
        : Promise.resolve(DONE),
    cancel: () => Promise.resolve(),
  };
  return { getReader: () => reader, cancel: () => Promise.resolve() };
}

/** Reads a relayed body to its end the way the Node host's pump does. */
function drain(reader: ChunkReader): Promise<void> {
  return new Promise((resolve, reject) => {
    const next = (r: Read): void => {
      if (r.done) resolve();
      else reader.read().then(next, reject);
    };
    reader.read().then(next, reject);
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

async function round(): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < STREAMS; i++) await drain(relaySource(engineBody(), options).getReader());
  return ((performance.now() - start) * 1000) / (STREAMS * CHUNKS);
}

const perChunk: number[] = [];
await round(); // warm-up
for (let r = 0; r < ROUNDS; r++) perChunk.push(await round());
console.log(
  `${STREAMS} streams of ${CHUNKS} chunks through the relay, µs per chunk by round: ${perChunk.map((v) => v.toFixed(3)).join(', ')}`,
);
console.log(`median ${median(perChunk).toFixed(3)} µs per chunk (${progress} chunks relayed)`);
