/**
 * Routing-quality benchmark: multi-turn chat conversations through the real router against 4
 * simulated engines with prefix caches (TTFT grows with uncached prompt blocks; a bounded number
 * of running requests per engine, so load imbalance shows up as queueing).
 *   npx tsx bench/routing.ts        # CONVERSATIONS=64 TURNS=8 CONCURRENCY=16 (POLICIES=a,b: a subset)
 * Each conversation has a long distinct system prompt; every turn sends the whole history (the
 * previous answers included) with `x-session-id: conv-<i>`; conversations interleave at a fixed
 * concurrency (one turn in flight per conversation). Per policy: the engines' prefix-cache hit
 * rate (cached / prompt blocks, from the engine logs), client-side TTFT (first streamed byte),
 * and the load imbalance: max over engines of the time-averaged in-flight requests, divided by
 * their mean. The oracle bypasses the router and pins conversation i to engine i mod 4.
 */
import { startNodeRouter } from '../src/adapters/node/server.ts';
import { parseRouterConfig } from '../src/core/config/schema.ts';
import type { RunningSimEngine } from '../src/sim/node.ts';
import { cacheHits, chat, converse, ENGINES, SIM, startEngines, ttftStats } from './routing-workload.ts';

const CONVERSATIONS = Number(process.env.CONVERSATIONS ?? 64);
const TURNS = Number(process.env.TURNS ?? 8);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const ALL_POLICIES = [
  'round_robin',
  'random',
  'power_of_two',
  'consistent_hash',
  'rendezvous_hash',
  'sticky_least_loaded',
  'least_loaded',
  'cache_aware',
];
/** POLICIES=cache_aware,round_robin runs a subset (round_robin and cache_aware are always run). */
const POLICIES = process.env.POLICIES
  ? ALL_POLICIES.filter((p) =>
      ['round_robin', 'cache_aware', ...(process.env.POLICIES ?? '').split(',')].includes(p),
    )
  : ALL_POLICIES;

interface Result {
  name: string;
  hitRate: number;
  meanTtft: number;
  p99Ttft: number;
  imbalance: number;
  requests: number[];
}

async function run(name: string, policy: string | null): Promise<Result> {
  const engines = await startEngines();
  const router =
    policy === null
      ? undefined
      : await startNodeRouter(
          parseRouterConfig({
            server: { host: '127.0.0.1', port: 0 },
            metrics: { port: 0 },
            workers: { urls: engines.map((e) => e.url), models: ['sim-model'] },
            policy: { name: policy },
            log: { level: 'error' },
          }),
          { logSink: () => {}, metricsListener: false },
        );
  const target = (conv: number) => router?.url ?? (engines[conv % ENGINES] as RunningSimEngine).url;

  // Time-averaged in-flight (running + waiting) per engine.
  const inflight = new Array<number>(ENGINES).fill(0);
  let ticks = 0;
  const sampler = setInterval(() => {
    ticks++;
    engines.forEach((e, i) => {
      const s = e.engine.stats();
      inflight[i] = (inflight[i] as number) + s.running + s.waiting;
    });
  }, 2);

  const ttfts = await converse({
    conversations: CONVERSATIONS,
    turns: TURNS,
    concurrency: CONCURRENCY,
    send: (conv, _turn, history) => chat(target(conv), history, { 'x-session-id': `conv-${conv}` }),
  });
  clearInterval(sampler);

  const { hitRate, requests } = cacheHits(engines);
  await router?.close(0);
  await Promise.all(engines.map((e) => e.close()));
  const avg = inflight.map((v) => v / Math.max(1, ticks));
  const mean = avg.reduce((a, b) => a + b, 0) / ENGINES;
  return {
    name,
    hitRate,
    ...ttftStats(ttfts),
    imbalance: mean === 0 ? 1 : Math.max(...avg) / mean,
    requests,
  };
}

const results: Result[] = [await run('oracle (conversation i → engine i mod 4, no router)', null)];
for (const p of POLICIES) results.push(await run(p, p));

console.log(
  `Routing quality: ${CONVERSATIONS} conversations × ${TURNS} turns, concurrency ${CONCURRENCY}, ` +
    `${ENGINES} simulated engines (prefix cache ${SIM.cacheBlocks} blocks of ${SIM.blockChars} chars, ` +
    `TTFT ${SIM.ttftMs} ms + ${SIM.blockMs} ms per uncached block, ${SIM.maxRunning} running per engine)\n`,
);
console.log(
  '| policy | prefix-cache hit rate | mean TTFT (ms) | p99 TTFT (ms) | max/mean in-flight | requests per engine |',
);
console.log('|---|---:|---:|---:|---:|---|');
for (const r of results) {
  console.log(
    `| ${r.name} | ${(r.hitRate * 100).toFixed(1)} % | ${r.meanTtft.toFixed(1)} | ${r.p99Ttft.toFixed(1)} | ` +
      `${r.imbalance.toFixed(2)} | ${r.requests.join(' / ')} |`,
  );
}
const oracle = results[0] as Result;
const ca = results.find((r) => r.name === 'cache_aware') as Result;
const rr = results.find((r) => r.name === 'round_robin') as Result;
console.log(
  `\ncache_aware: ${((ca.hitRate / oracle.hitRate) * 100).toFixed(1)} % of the oracle's hit rate ` +
    `(target ≥ 90 %), max/mean load ${ca.imbalance.toFixed(2)} (target ≤ 1.3), ` +
    `${(ca.hitRate / Math.max(rr.hitRate, 1e-9)).toFixed(1)}x round_robin's hit rate (target ≥ 2x)`,
);
