import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeK8s, parseSelector, startFakeK8s, startPodEngines, until } from '../support/fake-k8s.ts';
import { type K8sRouter, serving, startK8sRouter } from '../support/k8s-stack.ts';
import { chat, chatMessages, legPair, type PdEngines } from '../support/pd-stack.ts';

const startRouter = startK8sRouter;
type Router = K8sRouter;

// Pods 0 and 1 are prefill engines (0 with a separate bootstrap listener, as Mooncake's 8998), 2 and 3 decode.
let pods: Awaited<ReturnType<typeof startPodEngines>>;
let engines: PdEngines;
let k8s: FakeK8s;
let r: Router | undefined;

beforeAll(async () => {
  pods = await startPodEngines(4, (i) => ({
    tokens: 3,
    ttftMs: 1,
    ...(i === 0 ? { bootstrapPort: 0 } : {}),
  }));
  engines = { prefill: pods.engines.slice(0, 2), decode: pods.engines.slice(2) };
});
afterAll(async () => {
  await Promise.all(pods?.engines.map((e) => e.close()) ?? []);
});
beforeEach(async () => {
  for (const e of pods.engines) e.engine.reset();
  k8s = await startFakeK8s();
  const bootstrap0 = String(pods.engines[0]?.bootstrap?.port);
  const add = (i: number, role: string, annotations: Record<string, string> = {}) =>
    k8s.addPod({ name: `${role}-${i}`, labels: { app: 'vllm', role }, annotations, ip: pods.ips[i] });
  add(0, 'prefill', { 'vllm.ai/bootstrap-port': bootstrap0 });
  add(1, 'prefill', { 'sglang.ai/bootstrap-port': String(pods.port) });
  add(2, 'decode');
  add(3, 'decode');
  // Neither role: never a worker.
  k8s.addPod({ name: 'tokenizer', labels: { app: 'vllm' }, ip: '127.0.0.9' });
  r = await startRouter([
    ...[
      '--vllm-pd-disaggregation',
      '--kv-connector',
      'mooncake',
      '--service-discovery',
      '--selector',
      'app=vllm',
    ],
    ...['--prefill-selector', 'role=prefill', '--decode-selector', 'role=decode'],
    ...['--service-discovery-namespace', 'default', '--service-discovery-port', String(pods.port)],
    ...['--kubeconfig', k8s.kubeconfig()],
  ]);
  const s = r;
  await until(async () => (await s.workers()).filter(serving).length === 4, { what: 'four pods serving' });
});
afterEach(async () => {
  await r?.stop();
  r = undefined;
  await k8s.close();
});

const hostOf = (i: number) => pods.ips[i];

/** Sends a Mooncake request; returns which engines took its legs, checked against the bootstrap address. */
async function pdRequest(s: Router, question: string) {
  const { id, text } = await chat(s, { model: 'sim-model', messages: chatMessages(question), max_tokens: 3 });
  expect(text.length).toBeGreaterThan(0);
  const { prefill, decode } = legPair(engines, id);
  // The decode starts once its prefill has answered, and names that prefill's bootstrap server.
  expect(decode.leg.tMs).toBeGreaterThanOrEqual(prefill.leg.tEndMs ?? Number.POSITIVE_INFINITY);
  const p = engines.prefill.indexOf(prefill.engine);
  const port = p === 0 ? pods.engines[0]?.bootstrap?.port : pods.port;
  const kv = (decode.leg.body as { kv_transfer_params: Record<string, unknown> }).kv_transfer_params;
  expect(kv).toMatchObject({
    do_remote_prefill: true,
    remote_bootstrap_addr: `http://${hostOf(p)}:${port}`,
    remote_engine_id: `pod-${p}-dp0`,
  });
  return { prefill: p, decode: engines.decode.indexOf(decode.engine) + 2 };
}

describe('prefill/decode roles from pod selectors', () => {
  it('roles by selector, bootstrap ports by annotation in /workers; requests go prefill then decode', async () => {
    const s = r as Router;
    const byRole = (await s.workers()).map((w) => [w.pod, w.role, w.bootstrap_port ?? null]);
    expect(byRole.sort()).toEqual([
      ['decode-2', 'decode', null],
      ['decode-3', 'decode', null],
      ['prefill-0', 'prefill', pods.engines[0]?.bootstrap?.port],
      ['prefill-1', 'prefill', pods.port],
    ]);
    const selectors = k8s.lists().map((q) =>
      parseSelector(q.query.labelSelector ?? '')
        ?.map((kv) => kv.join('='))
        .sort(),
    );
    expect(selectors.sort()).toEqual([
      ['app=vllm', 'role=decode'],
      ['app=vllm', 'role=prefill'],
    ]);
    const legs = [];
    for (let i = 0; i < 4; i++) legs.push(await pdRequest(s, `question ${i}`));
    for (const l of legs) {
      expect([0, 1]).toContain(l.prefill);
      expect([2, 3]).toContain(l.decode);
    }
  });

  it('a prefill pod NotReady and a decode pod deleted take no more legs; no decode pod left: not ready', async () => {
    const s = r as Router;
    k8s.updatePod('prefill-0', { ready: false });
    k8s.deletePod('decode-2');
    await until(async () => (await s.byPod('decode-2')) === undefined, { what: 'decode-2 removed' });
    expect(await s.byPod('prefill-0')).toMatchObject({ suspended: true });
    for (let i = 0; i < 3; i++)
      expect(await pdRequest(s, `question ${i}`)).toEqual({ prefill: 1, decode: 3 });
    k8s.updatePod('prefill-0', { ready: true });
    await until(async () => serving(await s.byPod('prefill-0')), { what: 'prefill-0 serving again' });
    expect((await s.get('/readiness')).status).toBe(200);
    k8s.deletePod('decode-3');
    await until(async () => (await s.get('/readiness')).status === 503, {
      what: 'not ready without a decode pod',
    });
    expect((await s.workers()).map((w) => w.role).sort()).toEqual(['prefill', 'prefill']);
  });
});
