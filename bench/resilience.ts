/**
 * Resilience benchmark (issue 11): one bad engine must never take traffic down.
 *   npm run bench:resilience
 *
 * Part 1, single-engine faults: two simulated engines, A faulty and B healthy (A is listed first),
 * the router in-process with the schema defaults (policy cache_aware) plus the engines' URLs. Each
 * scenario sends REQUESTS chat completions at CONCURRENCY (closed loop) sharing a 600-character
 * system prompt with distinct user turns, every other one streaming; each request gives up after
 * CLIENT_TIMEOUT_S (a timeout is a client error). Upstream attempts come from the engines' request
 * logs (by x-request-id).
 * Part 2, pool-level: a single engine with a 503 blip of its first 10 responses (paced over
 * BLIP_DURATION_S, to see router-made 503s after the engine recovered), and a total outage.
 * Part 3, the retry budget at a steady rate (RATE, DURATION_S; see bench/resilience-budget.ts).
 *
 * Environment: REQUESTS (200), CONCURRENCY (10), CLIENT_TIMEOUT_S (15), TOKENS (16), TTFT_MS (5),
 * ITL_MS (2), POLICY (schema default), UPLOADS (24), UPLOAD_CONCURRENCY (2), UPLOAD_LIMIT_BYTES
 * (2 MiB: --max-payload-size of the upload scenario only), BLIP_DURATION_S (5), RATE (100),
 * DURATION_S (10), SCENARIOS (comma list of hang,stall,429,503,slow,cut,upload,blip,outage,budget;
 * default all).
 */

import { budgetSuite } from './resilience-budget.ts';
import { errorCount, errorKinds, formatMs, latencies, type Result, share } from './resilience-client.ts';
import {
  FAULTS,
  type FaultRow,
  type PoolRow,
  runBlip,
  runFault,
  runOutage,
  type Settings,
} from './resilience-scenarios.ts';

const env = (name: string, fallback: number) => {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`${name} must be a number >= 0 (got ${raw})`);
  return n;
};

const settings: Settings = {
  requests: env('REQUESTS', 200),
  concurrency: Math.max(1, env('CONCURRENCY', 10)),
  timeoutMs: env('CLIENT_TIMEOUT_S', 15) * 1000,
  tokens: env('TOKENS', 16),
  ttftMs: env('TTFT_MS', 5),
  itlMs: env('ITL_MS', 2),
  policy: process.env.POLICY || undefined,
  uploads: env('UPLOADS', 24),
  uploadConcurrency: Math.max(1, env('UPLOAD_CONCURRENCY', 2)),
  uploadLimitBytes: env('UPLOAD_LIMIT_BYTES', 2 * 1024 * 1024),
  blipDurationMs: env('BLIP_DURATION_S', 5) * 1000,
};
const selected = new Set(
  (process.env.SCENARIOS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const wanted = (key: string) => selected.size === 0 || selected.has(key);

function attemptsPerRequest(attempts: number, results: readonly Result[]): string {
  return results.length === 0 ? '–' : (attempts / results.length).toFixed(2);
}

function faultLine(r: FaultRow): string {
  const n = r.results.length;
  const onFaulty =
    r.scenario.faulty === null
      ? `– (A: ${r.tally.onFaulty} requests)`
      : `${share(r.tally.onFaulty, n)}, ${r.tally.attemptsOnFaulty} attempts`;
  const notes = [errorKinds(r.results)];
  if (r.tally.duplicated > 0) notes.push(`${r.tally.duplicated} requests started a 200 on 2+ attempts`);
  if (r.uploads) notes.push(`uploads: ${r.uploads}`);
  const open = r.circuits.map((c, i) => (c === 'closed' ? '' : `${'AB'[i]} ${c}`)).filter(Boolean);
  if (open.length > 0) notes.push(`circuit at the end: ${open.join(', ')}`);
  return `| ${r.scenario.fault} | ${share(errorCount(r.results), n)} | ${latencies(r.results)} | ${onFaulty} | ${attemptsPerRequest(r.tally.attempts, r.results)} | ${notes.filter(Boolean).join('; ') || '–'} |`;
}

function afterRecovery(r: PoolRow): string {
  if (r.recoveredAtMs === null) return '–';
  const late = r.results.filter(
    (x) => x.verdict === 'router' && x.status === 503 && x.endMs > r.recoveredAtMs!,
  );
  const first = Math.min(...r.results.map((x) => x.startMs));
  const at = `recovered ${formatMs(r.recoveredAtMs - first)} after the first request`;
  if (late.length === 0) return `0 (${at})`;
  const last = Math.max(...late.map((x) => x.endMs)) - r.recoveredAtMs;
  const overOne = late.filter((x) => x.endMs - r.recoveredAtMs! > 1000).length;
  return `${late.length}, the last ${formatMs(last)} after recovery; ${overOne} later than 1 s (${at})`;
}

function poolLine(r: PoolRow): string {
  const n = r.results.length;
  const own = r.results.filter((x) => x.verdict === 'engine').length;
  const made = r.results.filter((x) => x.verdict === 'router').length;
  return `| ${r.scenario} | ${share(errorCount(r.results), n)} | ${share(own, n)} | ${share(made, n)} | ${afterRecovery(r)} | ${attemptsPerRequest(r.tally.attempts, r.results)} | ${latencies(r.results)} |`;
}

const t0 = performance.now();
const s = settings;
const policy = s.policy ?? 'cache_aware (default)';
console.log(
  `Resilience under single-engine faults: policy ${policy}, ${s.requests} requests per scenario at ` +
    `concurrency ${s.concurrency}, half streaming, shared 600-character system prompt, client timeout ` +
    `${s.timeoutMs / 1000} s; engines: ${s.tokens} tokens, TTFT ${s.ttftMs} ms, ITL ${s.itlMs} ms.\n`,
);

const faultRows: FaultRow[] = [];
for (const sc of FAULTS) {
  if (!wanted(sc.key)) continue;
  const row = await runFault(sc, s);
  faultRows.push(row);
  console.error(`  ${sc.key}: done in ${formatMs(row.wallMs)}`);
}
if (faultRows.length > 0) {
  console.log(
    '| fault on engine A, engine B healthy | client errors | p50 / p99 latency | requests on the faulty engine | upstream attempts per request | errors by kind, notes |',
  );
  console.log('|---|---:|---:|---:|---:|---|');
  for (const r of faultRows) console.log(faultLine(r));
  console.log('');
}

const poolRows: PoolRow[] = [];
if (wanted('blip')) poolRows.push(await runBlip(s));
if (wanted('outage')) poolRows.push(await runOutage(s));
for (const r of poolRows) console.error(`  ${r.scenario}: done in ${formatMs(r.wallMs)}`);
if (poolRows.length > 0) {
  console.log(
    '| scenario | client errors | engine’s own error responses | router-made errors | router-made 503s after the engine recovered | upstream attempts per request | p50 / p99 latency |',
  );
  console.log('|---|---:|---:|---:|---|---:|---:|');
  for (const r of poolRows) console.log(poolLine(r));
  console.log('');
}

if (wanted('budget')) {
  const lines = await budgetSuite(env('RATE', 100), env('DURATION_S', 10));
  console.log(lines.join('\n'));
  console.log('');
}
console.log(`Total run time: ${formatMs(performance.now() - t0)}.`);
