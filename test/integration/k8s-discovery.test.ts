/**
 * Kubernetes service discovery over loopback: a real router started from the vLLM Router's command
 * line (`--service-discovery --selector ... --service-discovery-namespace default
 * --service-discovery-port P --kubeconfig FILE`) or production-stack's, a fake API server
 * (test/support/fake-k8s.ts) and one simulated engine behind each pod IP (127.0.0.2, 127.0.0.3, ...
 * on one port). Asserted: where requests go (the engines' logs) and what GET /workers shows.
 */
import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type FakeK8s,
  type PodSpec,
  parseSelector,
  startFakeK8s,
  startPodEngines,
  until,
} from '../support/fake-k8s.ts';
import { type K8sRouter, serving, startK8sRouter } from '../support/k8s-stack.ts';
import { sleepGate } from '../support/pd-stack.ts';

const startRouter = startK8sRouter;
type Router = K8sRouter;

const LABELS = { app: 'vllm-worker', role: 'inference' };
/** Per engine: while closed, its answers hold every token after the first. */
const gates = [0, 1, 2, 3].map(() => sleepGate());
let pods: Awaited<ReturnType<typeof startPodEngines>>;
let k8s: FakeK8s;
let r: Router | undefined;

beforeAll(async () => {
  pods = await startPodEngines(4, (i) => ({
    tokens: 4,
    ttftMs: 0,
    itlMs: 1,
    now: () => 0,
    sleep: gates[i]?.sleep,
  }));
});
afterAll(async () => {
  await Promise.all(pods?.engines.map((e) => e.close()) ?? []);
});
beforeEach(async () => {
  for (const g of gates) g.open();
  for (const e of pods.engines) e.engine.reset();
  k8s = await startFakeK8s();
});
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const g of gates) g.open();
  await r?.stop();
  r = undefined;
  await k8s.close();
});

const vllmRouterArgs = (namespace = true) => [
  ...'--service-discovery --selector app=vllm-worker role=inference'.split(' '),
  ...(namespace ? ['--service-discovery-namespace', 'default'] : []),
  ...['--service-discovery-port', String(pods.port), '--kubeconfig', k8s.kubeconfig()],
];
/** Pod `i` runs on the engine at 127.0.0.(i+2). */
const pod = (i: number, over: Partial<PodSpec> = {}) =>
  k8s.addPod({ name: `vllm-${i}`, labels: LABELS, ip: pods.ips[i], ...over });
const served = () => pods.engines.map((e) => e.engine.log.length);
const ask = (client: OpenAI, text = 'hello') =>
  client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: text }] });
const waitFor = (what: string, check: () => Promise<boolean>) => until(check, { what });

/** A stream with its first token read; `rest` resolves with the whole text once it ends. */
async function openStream(client: OpenAI) {
  const messages = [{ role: 'user' as const, content: 'a long answer' }];
  const stream = await client.chat.completions.create({ model: 'sim-model', messages, stream: true });
  const it = stream[Symbol.asyncIterator]();
  let text = (await it.next()).value?.choices[0]?.delta.content ?? '';
  const rest = (async () => {
    for (let n = await it.next(); !n.done; n = await it.next())
      text += n.value.choices[0]?.delta.content ?? '';
    return text;
  })();
  return { rest };
}

describe('pods become workers (the vLLM Router command line)', () => {
  it('pods appearing: not Ready, no traffic; Ready, traffic; NotReady, none; /workers names pod and UID', async () => {
    const b = pod(1);
    k8s.addPod({ name: 'other-app', labels: { app: 'vllm-worker' }, ip: pods.ips[2] });
    k8s.addPod({ name: 'other-ns', namespace: 'staging', labels: LABELS, ip: pods.ips[2] });
    r = await startRouter(vllmRouterArgs());
    const s = r;
    await waitFor('vllm-1 serving', async () => serving(await s.byPod('vllm-1')));
    expect(await s.byPod('vllm-1')).toMatchObject({
      url: `http://${pods.ips[1]}:${pods.port}`,
      discovered_by: 'kubernetes',
      pod: 'vllm-1',
      pod_uid: b.metadata.uid,
      namespace: 'default',
    });
    // Appearing on the watch: vllm-0 not Ready yet, then vllm-3 Ready (once it serves, vllm-0 was seen).
    const a = pod(0, { ready: false });
    pod(3);
    await waitFor('vllm-3 serving', async () => serving(await s.byPod('vllm-3')));
    expect(serving(await s.byPod('vllm-0'))).toBe(false);
    expect((await s.workers()).map((w) => w.pod).sort()).toEqual(['vllm-1', 'vllm-3']);
    for (let i = 0; i < 4; i++) await ask(s.client, `q${i}`);
    expect(served()[0]! + served()[2]!).toBe(0);
    expect(served()[1]! + served()[3]!).toBe(4);

    k8s.updatePod('vllm-0', { ready: true });
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    expect((await s.byPod('vllm-0'))?.pod_uid).toBe(a.metadata.uid);
    k8s.updatePod('vllm-1', { ready: false });
    k8s.updatePod('vllm-3', { ready: false });
    await waitFor('vllm-1, vllm-3 held off', async () => (await s.workers()).filter(serving).length === 1);
    const before = served();
    for (let i = 0; i < 3; i++) await ask(s.client, `q${i}`);
    expect(served().map((n, i) => n - (before[i] ?? 0))).toEqual([3, 0, 0, 0]);
  });

  it('a pod turning NotReady mid-stream: the stream finishes there, new requests go elsewhere', async () => {
    pod(0, { ready: false });
    pod(1);
    r = await startRouter(vllmRouterArgs());
    const s = r;
    await waitFor('vllm-1 serving', async () => serving(await s.byPod('vllm-1')));
    gates[1]?.close();
    const stream = await openStream(s.client);
    expect(pods.engines[1]?.engine.log[0]?.tEndMs).toBeNull();
    k8s.updatePod('vllm-1', { ready: false });
    k8s.updatePod('vllm-0', { ready: true });
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    expect(await s.byPod('vllm-1')).toMatchObject({ suspended: true, draining: false });
    await ask(s.client);
    expect(served()).toEqual([1, 1, 0, 0]);
    for (const g of gates) g.open();
    expect((await stream.rest).length).toBeGreaterThan(0);
    expect(pods.engines[1]?.engine.log[0]).toMatchObject({ completed: true, tokensSent: 4 });
  });

  it('a terminating pod (deletionTimestamp) drains its stream and is removed; DELETED later is harmless', async () => {
    pod(0);
    pod(1);
    k8s.updatePod('vllm-0', { ready: false });
    r = await startRouter(vllmRouterArgs());
    const s = r;
    await waitFor('vllm-1 serving', async () => serving(await s.byPod('vllm-1')));
    gates[1]?.close();
    const stream = await openStream(s.client);
    k8s.updatePod('vllm-0', { ready: true });
    k8s.updatePod('vllm-1', { terminating: true });
    await waitFor('vllm-1 draining', async () => (await s.byPod('vllm-1'))?.draining === true);
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    await ask(s.client);
    expect(served()).toEqual([1, 1, 0, 0]);
    for (const g of gates) g.open();
    await stream.rest;
    expect(pods.engines[1]?.engine.log[0]).toMatchObject({ completed: true, tokensSent: 4 });
    await waitFor('vllm-1 removed', async () => (await s.byPod('vllm-1')) === undefined);
    k8s.deletePod('vllm-1');
    await ask(s.client);
    expect(served()).toEqual([2, 1, 0, 0]);
    expect((await s.workers()).map((w) => w.pod)).toEqual(['vllm-0']);
  });

  it('DELETED removes a pod; a pod NotReady before its deletion is removed too (not left suspended)', async () => {
    for (const i of [0, 1, 2]) pod(i);
    r = await startRouter(vllmRouterArgs());
    const s = r;
    await waitFor('three serving', async () => (await s.workers()).filter(serving).length === 3);
    k8s.deletePod('vllm-0');
    await waitFor('vllm-0 removed', async () => (await s.byPod('vllm-0')) === undefined);
    k8s.updatePod('vllm-1', { ready: false });
    await waitFor('vllm-1 suspended', async () => (await s.byPod('vllm-1'))?.suspended === true);
    k8s.deletePod('vllm-1');
    await waitFor('vllm-1 removed', async () => (await s.byPod('vllm-1')) === undefined);
    for (let i = 0; i < 3; i++) await ask(s.client, `q${i}`);
    expect(served()).toEqual([0, 0, 3, 0]);
    expect((await s.workers()).map((w) => w.pod)).toEqual(['vllm-2']);
  });
});

describe('what is asked of the API server, and who owns which worker', () => {
  const selectorOf = (q: Record<string, string>) =>
    new Set(parseSelector(q.labelSelector ?? '')?.map((kv) => kv.join('=')));

  it('the selector and namespace are pushed to the API server; watches resume from the list, with bookmarks', async () => {
    pod(0);
    r = await startRouter(vllmRouterArgs());
    const s = r;
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    await waitFor('a watch open', async () => k8s.openWatches() === 1);
    const [list, watch] = k8s.requests;
    expect(k8s.requests.map((q) => q.path)).toEqual([
      '/api/v1/namespaces/default/pods',
      '/api/v1/namespaces/default/pods',
    ]);
    for (const q of [list, watch])
      expect(selectorOf(q?.query ?? {})).toEqual(new Set(['app=vllm-worker', 'role=inference']));
    expect(list?.watch).toBe(false);
    expect(watch?.query).toMatchObject({
      watch: 'true',
      resourceVersion: '1001',
      allowWatchBookmarks: 'true',
    });
  });

  it('production-stack spelling; KUBECONFIG naming a token-file kubeconfig (the in-cluster provider)', async () => {
    k8s.addPod({ name: 'prod-0', labels: { app: 'vllm', env: 'prod' }, ip: pods.ips[0] });
    k8s.addPod({ name: 'dev-0', labels: { app: 'vllm', env: 'dev' }, ip: pods.ips[1] });
    vi.stubEnv('KUBECONFIG', k8s.kubeconfig({ tokenFile: true }));
    r = await startRouter([
      ...'--service-discovery k8s --k8s-namespace default --k8s-label-selector app=vllm,env=prod'.split(' '),
      ...['--k8s-port', String(pods.port)],
    ]);
    const s = r;
    await waitFor('prod-0 serving', async () => serving(await s.byPod('prod-0')));
    expect(k8s.lists().map((q) => q.query.labelSelector)).toEqual(['app=vllm,env=prod']);
    expect((await s.workers()).map((w) => w.pod)).toEqual(['prod-0']);
    await ask(s.client);
    expect(served()).toEqual([1, 0, 0, 0]);
  });

  it('without a namespace: all namespaces (/api/v1/pods)', async () => {
    pod(0);
    pod(1, { namespace: 'team-b' });
    r = await startRouter(vllmRouterArgs(false));
    const s = r;
    await waitFor('two serving', async () => (await s.workers()).filter(serving).length === 2);
    expect(new Set(k8s.requests.map((q) => q.path))).toEqual(new Set(['/api/v1/pods']));
    expect((await s.workers()).map((w) => `${w.namespace}/${w.pod}`).sort()).toEqual([
      'default/vllm-0',
      'team-b/vllm-1',
    ]);
  });

  it('a worker added by the admin API is never removed by discovery, even a pod at its URL coming and going', async () => {
    pod(0);
    r = await startRouter(vllmRouterArgs());
    const s = r;
    await waitFor('vllm-0 serving', async () => serving(await s.byPod('vllm-0')));
    const url = `http://${pods.ips[2]}:${pods.port}`;
    const added = await fetch(`${s.router.url}/workers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url }),
    });
    expect(added.status).toBe(201);
    const admin = async () => (await s.workers()).find((w) => w.url === url);
    await waitFor('the admin worker serving', async () => serving(await admin()));
    // A pod at the same address appears (its URL is taken: not added), turns NotReady, and goes.
    k8s.addPod({ name: 'squatter', labels: LABELS, ip: pods.ips[2] });
    k8s.updatePod('squatter', { ready: false });
    k8s.deletePod('squatter');
    k8s.deletePod('vllm-0');
    await waitFor('vllm-0 removed', async () => (await s.byPod('vllm-0')) === undefined);
    const left = await s.workers();
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({ url, healthy: true, draining: false });
    expect(left[0]?.discovered_by).toBeUndefined();
    expect(left[0]?.suspended).toBeUndefined();
    for (let i = 0; i < 2; i++) await ask(s.client, `q${i}`);
    expect(served()).toEqual([0, 0, 2, 0]);
  });
});
