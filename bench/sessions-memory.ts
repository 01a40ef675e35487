/**
 * Heap taken by sticky_least_loaded sessions, routed through the fleet as the router does:
 *   npm run bench:sessions        # SESSIONS=100000 WORKERS=8 REPEATS=3 (runs node --expose-gc)
 * Each request carries a distinct session id (a 36-character UUID, in `x-session-id`): the id is
 * read by routing-input.ts, routed by `fleet.route` and settled, so every session stays pinned
 * (expiry 2 h, never reached). heapUsed after a full GC, before the first session and after the
 * last; the pinned-session gauge confirms every session is held. The target (issue 16) is 50 MB.
 * Each repeat runs in a fresh node process (nothing of an earlier run left on the heap).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseRouterConfig } from '../src/core/config/schema.ts';
import { systemClock, systemRandom } from '../src/core/contracts/runtime.ts';
import { createFleetFromConfig } from '../src/core/fleet/from-config.ts';
import { MetricsRegistry } from '../src/core/observability/metrics.ts';
import { policyNeeds } from '../src/core/policies/registry.ts';
import { extractRoutingInput } from '../src/core/routing/routing-input.ts';

const SESSIONS = Number(process.env.SESSIONS ?? 100_000);
const WORKERS = Number(process.env.WORKERS ?? 8);
const REPEATS = Number(process.env.REPEATS ?? 3);
const TARGET_MB = 50;
const POLICY = 'sticky_least_loaded';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:sessions)');

function heapAfterGc(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** The sum of a per-worker gauge in the Prometheus text. */
async function gaugeSum(metrics: MetricsRegistry, name: string): Promise<number> {
  let sum = 0;
  for (const line of (await metrics.render()).split('\n')) {
    if (line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

interface Run {
  heapMb: number;
  bytesPerSession: number;
  pinned: number;
  rssMb: number;
  routeUs: number;
}

async function run(): Promise<Run> {
  const config = parseRouterConfig({
    workers: { urls: Array.from({ length: WORKERS }, (_, i) => `http://10.0.0.${i + 1}:8000`) },
    policy: { name: POLICY },
    health: { disabled: true },
    sll: { maxSessions: Math.max(SESSIONS, 100_000) },
  });
  const metrics = new MetricsRegistry();
  const fleet = createFleetFromConfig(config, { clock: systemClock, random: systemRandom, metrics });
  const needs = policyNeeds([POLICY]);
  const body = { model: 'bench-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 };
  const route = (sessionId: string | undefined) => {
    const header = (name: string) => (name === 'x-session-id' ? sessionId : undefined);
    const input = extractRoutingInput(body, '/v1/chat/completions', header, needs);
    const r = fleet.route({ model: 'bench-model', stream: false, ...input });
    if (!r.ok) throw new Error(`not routed: ${r.code}`);
    fleet.settle(r.lease, { kind: 'success', status: 200 });
  };
  // Warm-up without session ids: code compiled, the fleet's lazy state (pools, metrics) created.
  for (let i = 0; i < 2000; i++) route(undefined);
  await gaugeSum(metrics, 'vllm_router_sll_pinned_sessions');

  const rss = process.memoryUsage().rss;
  const before = heapAfterGc();
  const t = performance.now();
  for (let i = 0; i < SESSIONS; i++) route(crypto.randomUUID());
  const routeUs = ((performance.now() - t) * 1000) / SESSIONS;
  const after = heapAfterGc();
  const pinned = await gaugeSum(metrics, 'vllm_router_sll_pinned_sessions');
  if (pinned !== SESSIONS) throw new Error(`${pinned} sessions pinned, expected ${SESSIONS}`);
  return {
    heapMb: (after - before) / 1e6,
    bytesPerSession: (after - before) / SESSIONS,
    pinned,
    rssMb: (process.memoryUsage().rss - rss) / 1e6,
    routeUs,
  };
}

if (process.env.SESSIONS_CHILD) {
  console.log(JSON.stringify(await run()));
  process.exit(0);
}
const runs: Run[] = [];
for (let r = 0; r < REPEATS; r++) {
  const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
    env: { ...process.env, SESSIONS_CHILD: '1' },
    encoding: 'utf8',
  });
  runs.push(JSON.parse(out.trim().split('\n').pop() as string) as Run);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const cell = (xs: number[], digits: number) =>
  `${median(xs).toFixed(digits)} [${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}]`;
console.log(`node ${process.version}, ${process.arch}; ${REPEATS} repeats: median [min-max]\n`);
console.log(
  '| sessions | workers | heap growth (MB) | bytes per session | RSS growth (MB) | route+settle µs/request | target |',
);
console.log('|---|---|---|---|---|---|---|');
const heap = median(runs.map((x) => x.heapMb));
console.log(
  `| ${SESSIONS} | ${WORKERS} | ${cell(
    runs.map((x) => x.heapMb),
    1,
  )} | ${cell(
    runs.map((x) => x.bytesPerSession),
    0,
  )} | ${cell(
    runs.map((x) => x.rssMb),
    1,
  )} | ${cell(
    runs.map((x) => x.routeUs),
    2,
  )} | ≤ ${TARGET_MB} MB: ${heap <= TARGET_MB ? 'met' : 'NOT met'} |`,
);
