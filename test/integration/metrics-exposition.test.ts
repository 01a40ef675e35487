/**
 * The /metrics page of a real Node router (loopback, simulated engines) after real traffic, and the
 * files an operator deploys on it: the page passes `promtool check metrics` and carries the runtime
 * families; every metric the Grafana dashboard (deploy/grafana) and the alert rules
 * (deploy/prometheus) query is on it; the dashboard's queries are valid PromQL, and the rules pass
 * `promtool check rules` and their own `promtool test rules`. The promtool checks need Debian's
 * `prometheus` package (.ci/run installs it); without it they are skipped, and say so.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { type Running, startStack } from '../support/harness.ts';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const DASHBOARD = root('deploy/grafana/vllm-edge-router.json');
const ALERTS = root('deploy/prometheus/alerts.yml');
const ALERT_TESTS = root('deploy/prometheus/alerts.test.yml');

const hasPromtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
if (!hasPromtool) {
  console.warn(
    '\n*** promtool not found: SKIPPING the promtool checks of /metrics and deploy/prometheus ***\n' +
      '*** install it with: apt-get install -y prometheus (.ci/run does)                      ***\n',
  );
}

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { input, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Metric names a PromQL expression reads (vllm_router_* and process_*). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(?:vllm_router|process)_[a-z0-9_]+\b/g)].map((m) => m[0]);
}

/** Families of a Prometheus text page by name, with their type. */
function families(page: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [, name, type] of page.matchAll(/^# TYPE (\S+) (\S+)$/gm))
    out.set(name as string, type as string);
  return out;
}

/** A queried name's family: `x_bucket`, `x_sum`, `x_count` of a histogram are `x`. */
function familyOf(name: string, known: Map<string, string>): string | undefined {
  if (known.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return known.get(base) === 'histogram' ? base : undefined;
}

interface Dashboard {
  templating: { list: { query?: string | { query: string } }[] };
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const panelExprs = dashboard.panels.flatMap((p) =>
  (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
);

type RuleGroup = { name: string; rules: { alert: string; expr: string }[] };
const alertRules = (loadAllYaml(readFileSync(ALERTS, 'utf8'))[0] as { groups: RuleGroup[] }).groups.flatMap(
  (g) => g.rules,
);

/** Families only a router with --state-store registers (the dashboard's "Store up" panel). */
const STORE_ONLY = ['vllm_router_state_store_up'];

describe('/metrics of a real router, and the dashboard and alerts built on it', () => {
  let stack: Running;
  let page: string;

  beforeAll(async () => {
    stack = await startStack({
      engines: 2,
      engineOptions: { tokens: 5, ttftMs: 2, itlMs: 40 },
      config: {
        admission: { maxConcurrentRequests: 8, queueSize: 4 },
        retry: { maxRetries: 3, initialBackoffMs: 1, maxBackoffMs: 2 },
        circuitBreaker: { failureThreshold: 1 },
      },
    });
    stack.engines[0]!.engine.configure({ failure: { mode: 'status', status: 503, first: 1 } });
    const post = (body: unknown) =>
      fetch(`${stack.router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const chat = (extra: object) => ({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
      ...extra,
    });
    for (const body of [
      chat({}),
      chat({ stream: true, stream_options: { include_usage: true } }),
      chat({ stream: true }),
      chat({ model: 'not-served' }),
      '{broken',
    ]) {
      await (await post(body)).text();
    }
    page = await (await fetch(stack.router.metricsUrl as string)).text();
  });

  afterAll(() => stack?.stop());

  it('carries the request, stream, token, admission, budget and runtime families, with build info', () => {
    expect(page).toMatch(/vllm_router_requests_total\{[^}]*status="200",model="sim-model"\} [1-9]/);
    expect(page).toMatch(/vllm_router_requests_total\{[^}]*status="404",model="other"\} 1/);
    expect(page).toMatch(
      /vllm_router_time_to_first_token_seconds_count\{model="sim-model",worker="[^"]+"\} [1-9]/,
    );
    expect(page).toMatch(
      /vllm_router_inter_token_latency_seconds_count\{model="sim-model",worker="[^"]+"\} [1-9]/,
    );
    expect(page).toMatch(/vllm_router_completion_tokens_total\{model="sim-model"\} [1-9]/);
    expect(page).toMatch(/vllm_router_admission_queue_wait_seconds_count\{outcome="admitted"\} [1-9]/);
    expect(page).toMatch(/^vllm_router_retry_budget_remaining \d+$/m);
    expect(page).toMatch(/^vllm_router_retries_total\{route="\/v1\/chat\/completions"\} [1-9]/m);
    expect(page).toContain(
      `vllm_router_build_info{version="${pkg.version}",runtime="node",runtime_version="${process.versions.node}"} 1`,
    );
    for (const name of [
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'process_start_time_seconds',
      'vllm_router_heap_used_bytes',
      'vllm_router_heap_total_bytes',
      'vllm_router_event_loop_lag_p99_seconds',
      'vllm_router_active_handles',
      'vllm_router_open_connections',
    ]) {
      expect(page, name).toMatch(new RegExp(`^${name} [0-9.e+-]+$`, 'm'));
    }
    expect(Number(/^process_resident_memory_bytes (\S+)$/m.exec(page)?.[1])).toBeGreaterThan(10_000_000);
  });

  it('every metric the Grafana dashboard queries is on the page', () => {
    const known = families(page);
    const queried = [
      ...panelExprs.map((p) => p.expr),
      ...dashboard.templating.list.map((v) => (typeof v.query === 'string' ? '' : (v.query?.query ?? ''))),
    ].flatMap(metricNames);
    expect(queried.length).toBeGreaterThan(30);
    const missing = [...new Set(queried)].filter(
      (n) => familyOf(n, known) === undefined && !STORE_ONLY.includes(n),
    );
    expect(missing).toEqual([]);
    // The store families exist in the code, registered when --state-store is set.
    const sources = spawnSync('grep', ['-rl', ...STORE_ONLY.flatMap((n) => ['-e', `'${n}'`]), root('src')], {
      encoding: 'utf8',
    });
    expect(sources.stdout.trim()).not.toBe('');
  });

  it('every metric the alert rules read is on the page', () => {
    const known = families(page);
    const names = alertRules.flatMap((r) => metricNames(r.expr));
    expect(names.length).toBeGreaterThan(5);
    expect([...new Set(names)].filter((n) => familyOf(n, known) === undefined)).toEqual([]);
  });

  it.skipIf(!hasPromtool)('promtool check metrics accepts the page', () => {
    const { status, output } = promtool(['check', 'metrics'], page);
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it.skipIf(!hasPromtool)('promtool check rules and promtool test rules pass on deploy/prometheus', () => {
    const check = promtool(['check', 'rules', ALERTS]);
    expect(check.output).toContain(`SUCCESS: ${alertRules.length} rules found`);
    expect(check.status).toBe(0);
    const test = promtool(['test', 'rules', ALERT_TESTS]);
    expect(test.output).toContain('SUCCESS');
    expect(test.status).toBe(0);
  });

  it.skipIf(!hasPromtool)(
    'the dashboard queries are valid PromQL (as recording rules, through promtool)',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'dashboard-promql-'));
      try {
        const concrete = (expr: string) =>
          expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', '.*').replaceAll('$instance', '.*');
        const rules = panelExprs.map((p, i) => ({ record: `dashboard:panel_${i}`, expr: concrete(p.expr) }));
        const file = join(dir, 'dashboard.rules.json');
        writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard', rules }] }));
        const { status, output } = promtool(['check', 'rules', file]);
        expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
        expect(status).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
