/**
 * Part 1 of `npm run bench:replicas`: the routing benchmark's multi-turn workload (bench/routing-workload.ts)
 * through 1, 2 or 4 router replicas, each request to the next replica in turn (round robin over all
 * requests, so a conversation's turns land on different replicas), without session headers, with the
 * default policy (cache_aware); the replicas share one store or each routes on its own state. Fresh
 * engines (empty caches) and fresh replicas for every row.
 */

import { newKeyPrefix, opsBetween, startReplicas, storeArgs, storeOps, totalOf } from './replicas-procs.ts';
import { cacheHits, chat, converse, startEngines, ttftStats } from './routing-workload.ts';

export interface HitsOptions {
  conversations: number;
  turns: number;
  concurrency: number;
}

export interface HitsRow {
  replicas: number;
  store: boolean;
  hitRate: number;
  meanTtft: number;
  p99Ttft: number;
  requests: number[];
  /** Store operations of all replicas over the run, per request (null: local-only). */
  opsPerRequest: number | null;
}

export async function hitsRun(replicas: number, store: boolean, o: HitsOptions): Promise<HitsRow> {
  const engines = await startEngines();
  try {
    const urls = engines.map((e) => e.url);
    const label = `hits-${replicas}-${store ? 'store' : 'local'}`;
    const servers = await startReplicas(label, replicas, urls, store ? storeArgs(newKeyPrefix()) : [], store);
    try {
      const before = store ? await Promise.all(servers.map((s) => storeOps(s.url))) : [];
      let next = 0;
      const ttfts = await converse({
        ...o,
        send: (_conv, _turn, history) => chat(servers[next++ % replicas]?.url as string, history),
      });
      const after = store ? await Promise.all(servers.map((s) => storeOps(s.url))) : [];
      const { hitRate, requests } = cacheHits(engines);
      const sent = ttfts.length;
      const opsPerRequest = store ? totalOf(opsBetween(before, after)) / sent : null;
      return { replicas, store, hitRate, ...ttftStats(ttfts), requests, opsPerRequest };
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}

const pct = (v: number) => `${(v * 100).toFixed(1)} %`;

export function printHits(rows: HitsRow[], o: HitsOptions): void {
  const base = rows.find((r) => r.replicas === 1 && !r.store);
  console.log(
    `\nPrefix-cache hit rate and TTFT: ${o.conversations} conversations × ${o.turns} turns, ` +
      `concurrency ${o.concurrency}, requests round robin over the replicas, no session header, ` +
      `cache_aware (the ratio is to one replica in memory):\n`,
  );
  console.log(
    '| replicas | state | prefix-cache hit rate | ÷ 1 replica | mean TTFT (ms) | p99 TTFT (ms) | requests per engine | store ops/request |',
  );
  console.log('|---:|---|---:|---:|---:|---:|---|---:|');
  for (const r of rows) {
    const ratio = base && base.hitRate > 0 ? (r.hitRate / base.hitRate).toFixed(2) : '–';
    console.log(
      `| ${r.replicas} | ${r.store ? 'shared store' : 'local only'} | ${pct(r.hitRate)} | ${ratio} | ` +
        `${r.meanTtft.toFixed(1)} | ${r.p99Ttft.toFixed(1)} | ${r.requests.join(' / ')} | ` +
        `${r.opsPerRequest === null ? '–' : r.opsPerRequest.toFixed(2)} |`,
    );
  }
  const most = Math.max(...rows.map((r) => r.replicas));
  const shared = rows.find((r) => r.replicas === most && r.store);
  const local = rows.find((r) => r.replicas === most && !r.store);
  if (base && shared && local && most > 1) {
    console.log(
      `\n${most} replicas: ${(shared.hitRate / base.hitRate).toFixed(2)}× the single replica's hit rate ` +
        `with the shared store (target ≥ 0.95), ${(local.hitRate / base.hitRate).toFixed(2)}× local only`,
    );
  }
}
