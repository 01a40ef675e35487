/**
 * The discovery watcher against scripted pod sources: one source per role selector, synced once
 * every source listed, restarts with backoff after failures (forever, logged once per change of
 * error), the metrics, stop; and the wiring in startNodeRouter with a simulated engine behind a pod.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PodSourceFactory, PodSourceHooks, PodTarget } from '../../src/adapters/node/k8s-client.ts';
import { KubernetesDiscovery, kubernetesDiscoveryFor } from '../../src/adapters/node/k8s-discovery.ts';
import type { PodLike } from '../../src/adapters/node/k8s-pods.ts';
import { type NodeRouter, startNodeRouter } from '../../src/adapters/node/server.ts';
import { ConfigError } from '../../src/core/config/errors.ts';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { assertSupported } from '../../src/core/config/unsupported.ts';
import { createFleetFromConfig } from '../../src/core/fleet/from-config.ts';
import { createLogger } from '../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { type RunningSimEngine, startSimEngine } from '../../src/sim/node.ts';
import { FakeClock, seededRandom } from '../support/fake-clock.ts';
import { testConfig } from '../support/harness.ts';

interface Scripted {
  target: PodTarget;
  hooks: PodSourceHooks;
  starts: number;
  stopped: boolean;
}

function scriptedSources() {
  const made: Scripted[] = [];
  const factory: PodSourceFactory = (target, hooks) => {
    const s: Scripted = { target, hooks, starts: 0, stopped: false };
    made.push(s);
    return {
      start: () => void s.starts++,
      stop: async () => {
        s.stopped = true;
      },
    };
  };
  return { made, factory };
}

function pod(
  ip: string,
  o: { uid?: string; ready?: boolean; annotations?: Record<string, string> } = {},
): PodLike {
  return {
    metadata: {
      name: `pod-${o.uid ?? 'a'}`,
      namespace: 'ns',
      uid: o.uid ?? 'a',
      annotations: o.annotations ?? {},
    },
    status: {
      phase: 'Running',
      podIP: ip,
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
    },
  };
}

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

function setup(discovery: Record<string, unknown> = {}, pd: Record<string, unknown> = {}) {
  const config = parseRouterConfig({
    discovery: { mode: 'k8s', selector: ['app=vllm'], namespace: 'ns', ...discovery },
    pd,
    health: { disabled: true },
  });
  const clock = new FakeClock();
  const metrics = new MetricsRegistry();
  const fleet = createFleetFromConfig(config, { clock, random: seededRandom(1), metrics });
  const logs: { level: string; msg: string }[] = [];
  const sink = (line: string, level: string) => logs.push({ level, msg: JSON.parse(line).msg });
  const logger = createLogger({ level: 'debug', json: true, sink, now: () => clock.now() });
  const { made, factory } = scriptedSources();
  const d = new KubernetesDiscovery(config, factory, { backoff: { initialMs: 1000, maxMs: 4000 } });
  d.start({ fleet, logger, metrics, clock, refreshWorkers: async () => {} });
  const sample = async (name: string) => {
    const lines = (await metrics.render()).split('\n').filter((l) => l.startsWith(name));
    return Object.fromEntries(
      lines.map((l) => [l.slice(name.length, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]),
    );
  };
  const warned = (prefix: string) => logs.filter((l) => l.msg.startsWith(prefix)).length;
  return { d, made, fleet, clock, logs, sample, warned };
}

describe('KubernetesDiscovery', () => {
  it('PD: one source per role selector; synced once both listed; pods become workers; gauges by role', async () => {
    const t = setup({ prefillSelector: ['role=p'], decodeSelector: ['role=d'] }, { enabled: true });
    expect(t.made.map((s) => [s.target.labelSelector, s.target.namespace, s.starts])).toEqual([
      ['app=vllm,role=p', 'ns', 1],
      ['app=vllm,role=d', 'ns', 1],
    ]);
    let synced = false;
    void t.d.synced().then(() => {
      synced = true;
    });
    t.made[0]?.hooks.listed();
    await Promise.resolve();
    expect(synced).toBe(false);
    t.made[1]?.hooks.listed();
    await t.d.synced();
    t.made[0]?.hooks.event('ADDED', pod('10.0.0.1', { annotations: { 'vllm.ai/bootstrap-port': '8998' } }));
    expect(t.fleet.getWorker('http://10.0.0.1:8000')).toMatchObject({ role: 'prefill', bootstrapPort: 8998 });
    expect(await t.sample('vllm_router_discovery_workers')).toEqual({
      '{role="prefill"}': 1,
      '{role="decode"}': 0,
    });
    expect(await t.sample('vllm_router_discovery_last_sync_timestamp_seconds')).toEqual({
      '': t.clock.now() / 1000,
    });
  });

  it('a failure restarts the source with backoff, forever; logged once per change of error; counted', async () => {
    const t = setup();
    const s = t.made[0] as Scripted;
    for (let i = 0; i < 4; i++) {
      s.hooks.failed(refused(), 'list');
      t.clock.advance(t.clock.nextDueIn() as number);
    }
    expect(t.clock.requested).toEqual([1000, 2000, 4000, 4000]);
    expect(s.starts).toBe(5);
    expect(t.warned('Kubernetes pod watch failed')).toBe(1);
    s.hooks.failed(Object.assign(new Error('Forbidden'), { statusCode: 403 }), 'watch');
    expect(t.warned('Kubernetes pod watch failed')).toBe(2);
    expect(await t.sample('vllm_router_discovery_errors_total')).toEqual({
      '{kind="list"}': 4,
      '{kind="watch"}': 0,
      '{kind="auth"}': 1,
    });
    t.clock.advance(4000);
    s.hooks.listed();
    expect(t.warned('Kubernetes pod watch works again')).toBe(1);
    s.hooks.failed(refused(), 'watch');
    expect(t.clock.requested.at(-1)).toBe(1000);
    expect(await t.sample('vllm_router_discovery_watch_restarts_total')).toEqual({ '': 5 });
  });

  it("the client's own re-watch counts as a restart; events and bookmarks move the last sync time", async () => {
    const t = setup();
    const s = t.made[0] as Scripted;
    s.hooks.listed();
    s.hooks.watchStarting();
    s.hooks.watchStarting();
    expect(await t.sample('vllm_router_discovery_watch_restarts_total')).toEqual({ '': 1 });
    t.clock.advance(60_000);
    s.hooks.activity();
    expect(await t.sample('vllm_router_discovery_last_sync_timestamp_seconds')).toEqual({
      '': t.clock.now() / 1000,
    });
  });

  it('stop: the source stops, a pending restart is cancelled, later failures are ignored', async () => {
    const t = setup();
    const s = t.made[0] as Scripted;
    s.hooks.failed(refused(), 'list');
    expect(t.clock.pendingTimers).toBe(1);
    await t.d.stop();
    expect(s.stopped).toBe(true);
    expect(t.clock.pendingTimers).toBe(0);
    s.hooks.failed(refused(), 'watch');
    expect(t.clock.pendingTimers).toBe(0);
    expect(s.starts).toBe(1);
  });

  it('configuration errors: an unreadable --kubeconfig; the refusal lifted only for runtimes with discovery', async () => {
    const config = parseRouterConfig({
      discovery: { mode: 'k8s', selector: ['a=b'], kubeconfig: 'no-such-kubeconfig' },
    });
    await expect(kubernetesDiscoveryFor(config, new FakeClock())).rejects.toThrow(ConfigError);
    await expect(kubernetesDiscoveryFor(config, new FakeClock())).rejects.toThrow(
      /--kubeconfig no-such-kubeconfig/,
    );
    expect(() => assertSupported(config, {})).toThrow(/--service-discovery/);
    expect(() => assertSupported(config, { kubernetesDiscovery: true })).not.toThrow();
  });
});

describe('startNodeRouter with --service-discovery', () => {
  let router: NodeRouter | undefined;
  let engine: RunningSimEngine | undefined;
  afterEach(async () => {
    await router?.close(0);
    await engine?.close();
    router = undefined;
    engine = undefined;
  });

  it('serves through the pod, shows it in /workers, holds requests off it when NotReady, stops discovery', async () => {
    engine = await startSimEngine({ id: 'pod-a', tokens: 2, ttftMs: 1, itlMs: 1 });
    const { made, factory } = scriptedSources();
    const config = testConfig([], {
      discovery: { mode: 'k8s', selector: ['app=vllm'], namespace: 'ns', port: engine.port },
    });
    router = await startNodeRouter(config, {
      logSink: () => {},
      metricsListener: false,
      k8s: { sources: factory },
    });
    const s = made[0] as Scripted;
    s.hooks.listed();
    await router.discovery?.synced();
    s.hooks.event('ADDED', pod('127.0.0.1'));
    const url = router.url;
    const until = async (check: () => Promise<boolean>) => {
      for (let i = 0; i < 250 && !(await check()); i++) await new Promise((r) => setTimeout(r, 20));
    };
    await until(async () => (await fetch(`${url}/readiness`)).status === 200);
    const complete = () =>
      fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-model', prompt: 'hi', max_tokens: 2 }),
      });
    expect((await complete()).status).toBe(200);
    expect(engine.engine.log).toHaveLength(1);
    const view = async () =>
      ((await (await fetch(`${url}/workers`)).json()) as { workers: Record<string, unknown>[] }).workers;
    expect((await view())[0]).toMatchObject({
      url: engine.url,
      discovered_by: 'kubernetes',
      pod: 'pod-a',
      pod_uid: 'a',
      namespace: 'ns',
    });
    s.hooks.event('MODIFIED', pod('127.0.0.1', { ready: false }));
    expect((await view())[0]).toMatchObject({ suspended: true });
    expect((await complete()).status).toBe(503);
    expect(engine.engine.log).toHaveLength(1);
    await router.stopAccepting();
    expect(s.stopped).toBe(true);
  });
});
