/**
 * Part 2 of `npm run bench:replicas`: what the store costs one replica. Non-streaming small chat
 * requests from 32 closed-loop clients against one replica (default policy, cache_aware) in front of
 * two zero-latency simulated engines (dist/node/sim.js, on CPU 1 with this process), in memory and
 * with the store, interleaved over the repeats; and the store operations the replica made per
 * request (its `vllm_router_state_store_operations_total`, read before and after).
 */
import { closedLoop, type Throughput } from './overhead-load.ts';
import { type Server, startEngine } from './overhead-procs.ts';
import { spread } from './pd-support.ts';
import {
  newKeyPrefix,
  opsBetween,
  ROOT,
  startReplicas,
  storeArgs,
  storeOps,
  totalOf,
} from './replicas-procs.ts';
import { chatBody } from './support.ts';

export interface ThroughputOptions {
  repeats: number;
  /** Seconds of each measurement (when `requests` is 0). */
  seconds: number;
  /** A fixed number of requests per measurement instead (0: `seconds`). */
  requests: number;
  warmRequests: number;
}

export interface ThroughputRun {
  store: boolean;
  result: Throughput;
  ops: Record<string, number>;
}

async function measure(engines: Server[], store: boolean, o: ThroughputOptions): Promise<ThroughputRun> {
  const urls = engines.map((e) => e.url);
  const extra = store ? storeArgs(newKeyPrefix()) : [];
  const [replica] = await startReplicas(`tput-${store ? 'store' : 'memory'}`, 1, urls, extra, store);
  const url = (replica as Server).url;
  try {
    const warm = await closedLoop(url, chatBody, 32, o.warmRequests);
    if (warm.errors > 0) throw new Error(`${warm.errors} errors while warming up`);
    const before = store ? [await storeOps(url)] : [];
    const result = await closedLoop(url, chatBody, 32, o.requests, o.seconds);
    const ops = store ? opsBetween(before, [await storeOps(url)]) : {};
    return { store, result, ops };
  } finally {
    await replica?.stop();
  }
}

export async function throughputRuns(o: ThroughputOptions): Promise<ThroughputRun[][]> {
  const engines = [await startEngine(ROOT, 'engine-a', 1), await startEngine(ROOT, 'engine-b', 1)];
  const rounds: ThroughputRun[][] = [];
  try {
    // Engines fresh from start run their first thousands of requests slower (JIT): warm them up.
    for (const e of engines) await closedLoop(e.url, chatBody, 32, 0, 1);
    for (let r = 0; r < o.repeats; r++) {
      const round: ThroughputRun[] = [];
      for (const store of r % 2 === 0 ? [false, true] : [true, false]) {
        const run = await measure(engines, store, o);
        console.log(
          `[${r + 1}/${o.repeats}] ${store ? 'shared store' : 'in memory'}: ${Math.round(run.result.rps)} req/s, ` +
            `p99 ${run.result.p99Ms.toFixed(2)} ms, errors ${run.result.errors}`,
        );
        round.push(run);
      }
      rounds.push(round);
    }
  } finally {
    await Promise.all(engines.map((e) => e.stop()));
  }
  return rounds;
}

export function printThroughput(rounds: ThroughputRun[][]): void {
  const of = (store: boolean, pick: (run: ThroughputRun, memory: ThroughputRun) => number) =>
    rounds.flatMap((round) => {
      const run = round.find((r) => r.store === store);
      const memory = round.find((r) => !r.store);
      return run && memory ? [pick(run, memory)] : [];
    });
  const perRequest = (run: ThroughputRun) => totalOf(run.ops) / Math.max(1, run.result.requests);
  console.log(
    '\nThroughput of one replica: non-streaming, c32, zero-latency engines, cache_aware ' +
      '(median (min–max) of repeats; ratio within each repeat):\n',
  );
  console.log('| state | req/s | p50 ms | p99 ms | req/s ÷ in memory | store ops/request | errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const store of [false, true]) {
    const cells = [
      spread(
        of(store, (r) => r.result.rps),
        0,
      ),
      spread(
        of(store, (r) => r.result.p50Ms),
        2,
      ),
      spread(
        of(store, (r) => r.result.p99Ms),
        2,
      ),
      spread(
        of(store, (r, m) => r.result.rps / m.result.rps),
        2,
      ),
      store ? spread(of(store, perRequest), 3) : '–',
      String(of(store, (r) => r.result.errors).reduce((a, b) => a + b, 0)),
    ];
    console.log(`| ${store ? 'shared store' : 'in memory'} | ${cells.join(' | ')} |`);
  }
  const stored = rounds.flatMap((round) => round.filter((r) => r.store));
  const requests = stored.reduce((n, r) => n + r.result.requests, 0);
  const byOp: Record<string, number> = {};
  for (const r of stored) for (const [op, n] of Object.entries(r.ops)) byOp[op] = (byOp[op] ?? 0) + n;
  const parts = Object.entries(byOp)
    .sort((a, b) => b[1] - a[1])
    .map(([op, n]) => `${op} ${(n / Math.max(1, requests)).toPrecision(2)}`);
  console.log(`\nStore operations per request, by operation (all repeats): ${parts.join(', ') || 'none'}`);
}
