/**
 * Kubernetes discovery when the API server misbehaves, over loopback (fake API server, simulated
 * engines behind the pod IPs, a router from the vLLM Router's command line with a fake clock, so
 * the retry backoff never waits real time): a watch cut and resumed from its resourceVersion
 * without missing what happened meanwhile; 410 Gone → re-list (a pod deleted in the gap goes);
 * bookmarks keeping the resume point fresh; the API server down at start; a wrong token.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../support/fake-clock.ts';
import { type FakeK8s, type PodSpec, startFakeK8s, startPodEngines, until } from '../support/fake-k8s.ts';
import { type K8sRouter, serving, startK8sRouter } from '../support/k8s-stack.ts';
import { sample } from '../support/pd-stack.ts';

const startRouter = startK8sRouter;
type Router = K8sRouter;

const LABELS = { app: 'vllm-worker', role: 'inference' };
let pods: Awaited<ReturnType<typeof startPodEngines>>;
let k8s: FakeK8s;
let r: Router | undefined;
let clock: FakeClock;

beforeAll(async () => {
  pods = await startPodEngines(3, () => ({ tokens: 2, ttftMs: 0, itlMs: 0 }));
});
afterAll(async () => {
  await Promise.all(pods?.engines.map((e) => e.close()) ?? []);
});
beforeEach(async () => {
  for (const e of pods.engines) e.engine.reset();
  k8s = await startFakeK8s({ token: 'the-token' });
  clock = new FakeClock();
});
afterEach(async () => {
  await r?.stop();
  r = undefined;
  await k8s.close();
});

const args = (kubeconfig = k8s.kubeconfig()) => [
  ...['--service-discovery', '--selector', 'app=vllm-worker', 'role=inference'],
  ...['--service-discovery-namespace', 'default', '--service-discovery-port', String(pods.port)],
  ...['--kubeconfig', kubeconfig],
];
const pod = (i: number, over: Partial<PodSpec> = {}) =>
  k8s.addPod({ name: `vllm-${i}`, labels: LABELS, ip: pods.ips[i], ...over });
/** Waits for a condition while the router's timers (its retry backoff) fire on the fake clock. */
const drive = (what: string, check: () => boolean | Promise<boolean>) => until(check, { what, clock });
/** Waits for a condition without moving the clock (health probes run on it). */
const waitFor = (what: string, check: () => Promise<boolean>) => until(check, { what });
const okLists = () => k8s.lists().filter((q) => q.status === 200);

async function startServing(...indexes: number[]) {
  for (const i of indexes) pod(i);
  r = await startRouter(args(), { clock });
  const s = r;
  await waitFor('pods serving', async () => (await s.workers()).filter(serving).length === indexes.length);
  await waitFor('a watch open', async () => k8s.openWatches() === 1);
  return s;
}

describe('watch failures', () => {
  it('a cut watch resumes from its resourceVersion: what happened while it was down applies, no re-list', async () => {
    const s = await startServing(0, 1);
    const seen = k8s.resourceVersion();
    await k8s.down('unavailable');
    const before = k8s.requests.length;
    await drive('a resume refused with 503', () => k8s.requests.slice(before).some((q) => q.status === 503));
    k8s.deletePod('vllm-0');
    k8s.updatePod('vllm-1', { ready: false });
    pod(2);
    await k8s.up();
    await drive('the watch resumed', () =>
      k8s.watches().some((q) => q.status === 200 && q !== k8s.watches()[0]),
    );
    await waitFor('vllm-2 serving', async () => serving(await s.byPod('vllm-2')));
    expect(await s.byPod('vllm-0')).toBeUndefined();
    expect(await s.byPod('vllm-1')).toMatchObject({ suspended: true });
    const resumed = k8s.watches().filter((q) => q.status === 200);
    expect(resumed.map((q) => q.query.resourceVersion)).toEqual(['1002', String(seen)]);
    expect(okLists()).toHaveLength(1);
  });

  it.each(['event', 'status'] as const)(
    '410 Gone (%s) → re-list: a pod deleted during the gap is removed',
    async (how) => {
      const s = await startServing(0, 1);
      k8s.configure({ goneAs: how });
      await k8s.down('unavailable');
      const before = k8s.requests.length;
      await drive('a resume refused with 503', () =>
        k8s.requests.slice(before).some((q) => q.status === 503),
      );
      k8s.deletePod('vllm-1');
      k8s.compact();
      await k8s.up();
      await drive('a second list', () => okLists().length === 2);
      await waitFor('vllm-1 removed', async () => (await s.byPod('vllm-1')) === undefined);
      expect(serving(await s.byPod('vllm-0'))).toBe(true);
      const gone = k8s.watches().filter((q) => q.query.resourceVersion === '1002' && q.status !== 503);
      expect(gone.at(-1)?.status).toBe(how === 'event' ? 200 : 410);
      const metrics = await (await s.get('/metrics')).text();
      expect(sample(metrics, 'vllm_router_discovery_workers{role="regular"}')).toBe(1);
      expect(sample(metrics, 'vllm_router_discovery_watch_restarts_total')).toBeGreaterThanOrEqual(1);
      expect(sample(metrics, 'vllm_router_discovery_last_sync_timestamp_seconds')).toBe(clock.now() / 1000);
    },
  );

  it('bookmarks move the resume point: after a compaction a closed watch resumes without a re-list', async () => {
    const s = await startServing(0);
    // Changes the selector does not match move the resourceVersion; only a bookmark tells the router.
    k8s.addPod({ name: 'web', labels: { app: 'web' } });
    expect(k8s.bookmark()).toBe(1);
    const marked = String(k8s.resourceVersion());
    k8s.compact();
    k8s.dropWatches('end');
    await drive('the watch reopened', () => k8s.watches().length === 2 && k8s.openWatches() === 1);
    expect(k8s.watches()[1]?.query.resourceVersion).toBe(marked);
    expect(okLists()).toHaveLength(1);
    pod(1);
    await waitFor('vllm-1 serving', async () => serving(await s.byPod('vllm-1')));
  });
});

describe('the API server unreachable or refusing the router', () => {
  it('down at start: the router starts, /readiness 503; pods appear once it is up', async () => {
    await k8s.down('refuse');
    pod(0);
    r = await startRouter(args(), { clock });
    const s = r;
    expect((await s.get('/liveness')).status).toBe(200);
    const readiness = await s.get('/readiness');
    expect(readiness.status).toBe(503);
    expect(await readiness.json()).toMatchObject({ status: 'not_ready', total_workers: 0 });
    await until(() => clock.pendingTimers > 0, { what: 'a retry scheduled' });
    expect(k8s.requests).toHaveLength(0);
    await k8s.up();
    await drive('a list', () => okLists().length === 1);
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    expect((await s.get('/readiness')).status).toBe(200);
  });

  it('a wrong token: the failure is logged once while retries go on; the token accepted later, pods appear', async () => {
    pod(0);
    r = await startRouter(args(k8s.kubeconfig({ token: 'stale-token' })), { clock });
    const s = r;
    await drive('three refused lists', () => k8s.requests.filter((q) => q.status === 401).length >= 3);
    const warnings = s.logs.filter((l) => l.level === 'warn' || l.level === 'error');
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0])).toMatch(/401|unauthori[sz]ed/i);
    expect((await s.get('/liveness')).status).toBe(200);
    expect(await s.workers()).toEqual([]);
    k8s.configure({ token: 'stale-token' });
    await drive('a list', () => okLists().length === 1);
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    expect(s.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toHaveLength(1);
  });
});
