/**
 * Router replicas sharing one fleet through Redis (issue 17): `npm run bench:replicas`.
 *   npm run bench:replicas   # CONVERSATIONS=64 TURNS=8 CONCURRENCY=16 REPLICAS=1,2,4
 *                            # REPEATS=3 DURATION=5 (REQUESTS=n: a fixed count instead) WARM_REQUESTS=2000
 *                            # FAILOVER_SECONDS=12 FAILOVER_SESSIONS=48 FAILOVER_CONCURRENCY=12 FAILOVER_TURNS=8
 *                            # PARTS=hits,throughput,failover SKIP_BUILD=1 KEEP_LOGS=1
 *                            # STATE_STORE=redis://127.0.0.1:6379/0
 * Every replica is a dist/node/main.js process (built first unless SKIP_BUILD=1) on CPU 0 (taskset,
 * when there are 2+ CPUs); engines, clients and this process run on CPU 1.
 * 1. hits (replicas-hits.ts): prefix-cache hit rate and TTFT with 1, 2, 4 replicas, requests round
 *    robin over them, no session header, cache_aware; shared store and local-only side by side.
 * 2. throughput (replicas-throughput.ts): one replica at c32, with the store vs in memory, and store
 *    operations per request.
 * 3. failover (replicas-failover.ts): 3 replicas, sticky sessions, one killed mid-run.
 * Each fleet has a key prefix of its own (`bench-replicas:<run>:<n>:`); the run's keys are deleted at
 * the end.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { PIN } from './overhead-procs.ts';
import { failoverRun, printFailover } from './replicas-failover.ts';
import { type HitsRow, hitsRun, printHits } from './replicas-hits.ts';
import { deleteStoreKeys, ROOT, STATE_STORE } from './replicas-procs.ts';
import { printThroughput, throughputRuns } from './replicas-throughput.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const PARTS = (process.env.PARTS ?? 'hits,throughput,failover').split(',').map((p) => p.trim());
const HITS = {
  conversations: env('CONVERSATIONS', 64),
  turns: env('TURNS', 8),
  concurrency: env('CONCURRENCY', 16),
};
const REPLICAS = (process.env.REPLICAS ?? '1,2,4').split(',').map(Number);
const THROUGHPUT = {
  repeats: env('REPEATS', 3),
  seconds: env('DURATION', 5),
  requests: env('REQUESTS', 0),
  warmRequests: env('WARM_REQUESTS', 2000),
};
const FAILOVER = {
  seconds: env('FAILOVER_SECONDS', 12),
  concurrency: env('FAILOVER_CONCURRENCY', 12),
  sessions: env('FAILOVER_SESSIONS', 48),
  turns: env('FAILOVER_TURNS', 8),
};

async function main(): Promise<void> {
  if (process.env.SKIP_BUILD !== '1') execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')]);
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const started = performance.now();
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${PIN ? 'replicas on CPU 0, engines and clients on CPU 1' : 'no pinning'}; ` +
      `store ${STATE_STORE}; parts ${PARTS.join(', ')}`,
  );
  try {
    if (PARTS.includes('hits')) {
      const rows: HitsRow[] = [];
      for (const n of REPLICAS) {
        for (const store of [false, true]) {
          const row = await hitsRun(n, store, HITS);
          console.log(
            `${n} replica(s), ${store ? 'shared store' : 'local only'}: hit rate ${(row.hitRate * 100).toFixed(1)} %, ` +
              `mean TTFT ${row.meanTtft.toFixed(1)} ms`,
          );
          rows.push(row);
        }
      }
      printHits(rows, HITS);
    }
    if (PARTS.includes('throughput')) printThroughput(await throughputRuns(THROUGHPUT));
    if (PARTS.includes('failover')) printFailover(await failoverRun(FAILOVER), FAILOVER);
  } finally {
    const deleted = await deleteStoreKeys();
    console.log(
      `\n${deleted} store keys of this run deleted; ${((performance.now() - started) / 1000).toFixed(0)} s; ` +
        `load average at the end ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
    );
  }
}

await main();
