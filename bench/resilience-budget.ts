/**
 * The retry-budget part of the resilience benchmark: upstream attempts per client request and the
 * client-visible error rate at a steady (open-loop) request rate, round robin, tiny prompts.
 *   outage, budget on   every engine answers 503; retry budget at its defaults (0.2, 10/s)
 *   outage, budget off  the same with the budget lifted (ratio 1000)
 *   one engine 30% 503  engine A fails 30 % of requests with 503 (seeded), engine B is healthy
 */
import { startNodeRouter } from '../src/adapters/node/server.ts';
import { parseRouterConfig } from '../src/core/config/schema.ts';
import { startSimEngine } from '../src/sim/node.ts';
import type { FailurePlan } from '../src/sim/types.ts';
import { postChat } from './support.ts';

interface Scenario {
  name: string;
  plans: FailurePlan[];
  budgetRatio?: number;
}

const scenarios: Scenario[] = [
  {
    name: 'total outage (503), retry budget on',
    plans: [
      { mode: 'status', status: 503 },
      { mode: 'status', status: 503 },
    ],
  },
  {
    name: 'total outage (503), retry budget off',
    plans: [
      { mode: 'status', status: 503 },
      { mode: 'status', status: 503 },
    ],
    budgetRatio: 1000,
  },
  {
    name: 'engine A fails 30% with 503, B healthy',
    plans: [{ mode: 'status', status: 503, rate: 0.3 }, { mode: 'none' }],
  },
];

const body = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 4,
});

async function run(s: Scenario, rate: number, durationS: number) {
  const engines = await Promise.all(
    s.plans.map((failure, i) => startSimEngine({ id: `e${i}`, seed: 42 + i, failure, port: 0 })),
  );
  const config = parseRouterConfig({
    server: { host: '127.0.0.1', port: 0 },
    metrics: { port: 0 },
    workers: { urls: engines.map((e) => e.url), models: ['sim-model'] },
    policy: { name: 'round_robin' },
    log: { level: 'error' },
    retry: s.budgetRatio === undefined ? {} : { budgetRatio: s.budgetRatio },
  });
  const router = await startNodeRouter(config, { logSink: () => {}, metricsListener: false });
  const total = rate * durationS;
  const statuses: number[] = [];
  const pending: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(postChat(router.url, body).then((status) => void statuses.push(status)));
  }
  await Promise.all(pending);
  const upstream = engines.reduce((n, e) => n + e.engine.stats().requests_total, 0);
  const errors = statuses.filter((st) => st !== 200).length;
  await router.close(0);
  await Promise.all(engines.map((e) => e.close()));
  return { name: s.name, requests: total, upstream, perRequest: upstream / total, errorRate: errors / total };
}

/** Runs the three budget scenarios; answers the markdown lines to print. */
export async function budgetSuite(rate: number, durationS: number): Promise<string[]> {
  const rows = [];
  for (const s of scenarios) rows.push(await run(s, rate, durationS));
  const lines = [
    `Retry budget at ${rate} req/s for ${durationS} s (open loop, round_robin), default retry settings:`,
    '',
    '| scenario | client requests | upstream attempts | attempts per request | client-visible errors |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.requests} | ${r.upstream} | ${r.perRequest.toFixed(2)} | ${(r.errorRate * 100).toFixed(1)} % |`,
    );
  }
  return lines;
}
