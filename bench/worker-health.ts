/**
 * Circuit-breaker benchmark: 3 engines under a steady (open-loop) load; engine C starts failing
 * every request (503); later it recovers. Reports how many client requests reached C before its
 * circuit opened, the client-visible error rate, and how long after recovery C took traffic again.
 *   npm run bench:health           # RATE=100, CB_TIMEOUT_SECS=5 (default breaker otherwise)
 */
import { startNodeRouter } from '../src/adapters/node/server.ts';
import { parseRouterConfig } from '../src/core/config/schema.ts';
import { startSimEngine } from '../src/sim/node.ts';
import { postChat } from './support.ts';

const RATE = Number(process.env.RATE ?? 100);
const CB_TIMEOUT_SECS = Number(process.env.CB_TIMEOUT_SECS ?? 5);
const PHASE_MS = { healthy: 2000, failing: 4000, recovered: CB_TIMEOUT_SECS * 1000 + 4000 };

const engines = await Promise.all(['a', 'b', 'c'].map((id) => startSimEngine({ id, port: 0 })));
const bad = engines[2]!;
const config = parseRouterConfig({
  server: { host: '127.0.0.1', port: 0 },
  metrics: { port: 0 },
  workers: { urls: engines.map((e) => e.url) },
  policy: { name: 'round_robin' },
  log: { level: 'error' },
  circuitBreaker: { timeoutDurationSecs: CB_TIMEOUT_SECS },
});
const router = await startNodeRouter(config, { logSink: () => {}, metricsListener: false });

const results: { at: number; status: number }[] = [];
const pending: Promise<void>[] = [];
const t0 = performance.now();
let failingAt = 0;
let recoveredAt = 0;
let opened: number | undefined;
let closed: number | undefined;
const total = PHASE_MS.healthy + PHASE_MS.failing + PHASE_MS.recovered;
for (let i = 0; ; i++) {
  const due = t0 + (i * 1000) / RATE;
  if (due - t0 > total) break;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const now = performance.now() - t0;
  if (!failingAt && now >= PHASE_MS.healthy) {
    failingAt = now;
    bad.engine.configure({ failure: { mode: 'status', status: 503 } });
  }
  if (!recoveredAt && now >= PHASE_MS.healthy + PHASE_MS.failing) {
    recoveredAt = now;
    bad.engine.configure({ failure: { mode: 'none' } });
  }
  const circuit = router.fleet.getWorker(bad.url)?.circuit;
  if (opened === undefined && circuit === 'open') opened = now;
  if (opened !== undefined && closed === undefined && recoveredAt && circuit === 'closed') closed = now;
  pending.push(postChat(router.url).then((status) => void results.push({ at: now, status })));
}
await Promise.all(pending);

const origin = performance.timeOrigin + t0;
const cLog = bad.engine.log.map((e) => ({ at: e.tMs - origin, status: e.status }));
const reachedWhileFailing = cLog.filter(
  (e) => e.at >= failingAt && e.at < (opened ?? Number.POSITIVE_INFINITY),
);
const firstBack = cLog.find((e) => e.at >= recoveredAt && e.status === 200);
const errors = results.filter((r) => r.status !== 200).length;
await router.close(0);
await Promise.all(engines.map((e) => e.close()));

console.log(
  `3 engines, round_robin, ${RATE} req/s open loop; engine C answers 503 to everything from ` +
    `t=${(failingAt / 1000).toFixed(1)} s to t=${(recoveredAt / 1000).toFixed(1)} s; ` +
    `breaker: threshold 10 in 120 s, timeout ${CB_TIMEOUT_SECS} s, 3 probes; retries on (defaults).\n`,
);
console.log('| measure | value |');
console.log('|---|---:|');
console.log(`| client requests | ${results.length} |`);
console.log(`| client-visible errors | ${errors} (${((errors / results.length) * 100).toFixed(2)} %) |`);
console.log(
  `| attempts C received while failing, before its circuit opened | ${reachedWhileFailing.length} |`,
);
console.log(
  `| time from first failure to open circuit | ${opened ? `${((opened - failingAt) / 1000).toFixed(2)} s` : 'never'} |`,
);
console.log(
  `| time from recovery to C's first successful request | ${firstBack ? `${((firstBack.at - recoveredAt) / 1000).toFixed(2)} s` : 'never'} |`,
);
console.log(
  `| time from recovery to closed circuit | ${closed ? `${((closed - recoveredAt) / 1000).toFixed(2)} s` : 'never'} |`,
);
