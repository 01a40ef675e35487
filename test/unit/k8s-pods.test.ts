/**
 * Pods as workers: which pods serve, their URL and role, the bootstrap and model annotations, what
 * each pod event does to the fleet (NotReady suspends, deletion drains even after NotReady, a new IP
 * re-adds), and ownership by pod UID (static and admin workers are never touched).
 */
import { describe, expect, it } from 'vitest';
import { watchPlan } from '../../src/adapters/node/k8s-plan.ts';
import {
  type PodLike,
  type PodRules,
  podUrl,
  readPod,
  reconcilePod,
} from '../../src/adapters/node/k8s-pods.ts';
import { PodWorkers } from '../../src/adapters/node/k8s-workers.ts';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { createFleetFromConfig } from '../../src/core/fleet/from-config.ts';
import { createLogger } from '../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { FakeClock, seededRandom } from '../support/fake-clock.ts';

const RULES: PodRules = {
  port: 8000,
  role: 'regular',
  bootstrapAnnotations: ['vllm.ai/bootstrap-port', 'sglang.ai/bootstrap-port'],
};
const ID = { uid: 'u1', name: 'p1', namespace: 'ns' };

interface P {
  uid?: string;
  name?: string;
  ip?: string | null;
  phase?: string;
  ready?: boolean;
  deleting?: boolean;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function pod(p: P = {}): PodLike {
  return {
    metadata: {
      name: p.name ?? 'p1',
      namespace: 'ns',
      uid: p.uid ?? 'u1',
      labels: p.labels ?? {},
      annotations: p.annotations ?? {},
      ...(p.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    status: {
      phase: p.phase ?? 'Running',
      ...(p.ip === null ? {} : { podIP: p.ip ?? '10.0.0.1' }),
      conditions: [{ type: 'Ready', status: p.ready === false ? 'False' : 'True' }],
    },
  };
}

describe('readPod', () => {
  it('serves only with an IP, phase Running, Ready True and no deletionTimestamp', () => {
    const serving = (p: P) => {
      const r = readPod(pod(p), RULES, ID);
      return r.kind === 'worker' ? r.serving : r.kind;
    };
    expect(serving({})).toBe(true);
    expect(serving({ ready: false })).toBe(false);
    expect(serving({ phase: 'Pending' })).toBe(false);
    expect(serving({ ip: null })).toBe('no-ip');
    expect(serving({ deleting: true })).toBe('gone');
    expect(serving({ phase: 'Failed' })).toBe('gone');
    expect(serving({ phase: 'Succeeded' })).toBe('gone');
  });

  it('URL from the pod IP and the discovery port, IPv6 in brackets; the source names the pod', () => {
    expect(podUrl('10.1.2.3', 8000)).toBe('http://10.1.2.3:8000');
    expect(podUrl('fd00::5', 8100)).toBe('http://[fd00::5]:8100');
    const r = readPod(pod({ ip: 'fd00::5' }), { ...RULES, port: 8100 }, ID);
    expect(r).toMatchObject({
      kind: 'worker',
      spec: {
        url: 'http://[fd00::5]:8100',
        role: 'regular',
        source: { discovery: 'kubernetes', pod: 'p1', uid: 'u1', namespace: 'ns' },
      },
    });
  });

  it('prefill bootstrap port from the vllm.ai annotation, then sglang.ai; invalid values give none and a note', () => {
    const prefill = { ...RULES, role: 'prefill' as const };
    const spec = (annotations: Record<string, string>, rules: PodRules = prefill) => {
      const r = readPod(pod({ annotations }), rules, ID);
      return r.kind === 'worker' ? { port: r.spec.bootstrapPort, notes: r.notes } : undefined;
    };
    expect(spec({ 'vllm.ai/bootstrap-port': '8998', 'sglang.ai/bootstrap-port': '9000' })).toEqual({
      port: 8998,
      notes: [],
    });
    expect(spec({ 'sglang.ai/bootstrap-port': '9000' })).toEqual({ port: 9000, notes: [] });
    expect(spec({})).toEqual({ port: null, notes: [] });
    const bad = spec({ 'vllm.ai/bootstrap-port': '70000' });
    expect(bad?.port).toBeNull();
    expect(bad?.notes[0]).toContain('vllm.ai/bootstrap-port="70000" is not a port');
    // Decode pods carry no bootstrap port.
    expect(spec({ 'vllm.ai/bootstrap-port': '8998' }, { ...RULES, role: 'decode' })?.port).toBeUndefined();
  });

  it('production-stack roles from the model label; models from --k8s-model-label', () => {
    const byLabel: PodRules = {
      ...RULES,
      role: 'label',
      roleLabel: 'model',
      prefillLabels: ['llama-p'],
      decodeLabels: ['llama-d'],
    };
    const role = (labels: Record<string, string>) => {
      const r = readPod(pod({ labels }), byLabel, ID);
      return r.kind === 'worker' ? r.spec.role : r.kind;
    };
    expect(role({ model: 'llama-p' })).toBe('prefill');
    expect(role({ model: 'llama-d' })).toBe('decode');
    expect(role({ model: 'other' })).toBe('skip');
    const withModel = readPod(pod({ labels: { served: 'llama' } }), { ...RULES, modelLabel: 'served' }, ID);
    expect(withModel).toMatchObject({ spec: { models: ['llama'] } });
    const without = readPod(pod(), { ...RULES, modelLabel: 'served' }, ID);
    expect(without.kind === 'worker' && without.spec.models).toBe(undefined);
  });
});

describe('reconcilePod', () => {
  /** Feeds events in order; returns the action kinds of each. */
  function run(events: ['ADDED' | 'MODIFIED' | 'DELETED', P][]): string[][] {
    let prev: ReturnType<typeof reconcilePod>['next'];
    return events.map(([type, p]) => {
      const r = reconcilePod(prev, type, pod(p), RULES);
      prev = r.next;
      return r.actions.map((a) => a.kind);
    });
  }

  it('added once Ready; NotReady suspends, Ready resumes; terminating removes after NotReady', () => {
    expect(
      run([
        ['ADDED', { ip: null, phase: 'Pending', ready: false }],
        ['MODIFIED', { ready: false }],
        ['MODIFIED', {}],
        ['MODIFIED', {}],
        ['MODIFIED', { ready: false }],
        ['MODIFIED', {}],
        ['MODIFIED', { ready: false }],
        ['MODIFIED', { ready: false, deleting: true }],
        ['DELETED', { ready: false, deleting: true }],
      ]),
    ).toEqual([[], [], ['add'], [], ['suspend'], ['resume'], ['suspend'], ['remove'], []]);
  });

  it('a DELETED event removes a pod that was NotReady; a new pod IP removes the old worker and adds the new', () => {
    expect(
      run([
        ['ADDED', {}],
        ['MODIFIED', { ready: false }],
        ['DELETED', { ready: false }],
      ]),
    ).toEqual([['add'], ['suspend'], ['remove']]);
    const r = run([
      ['ADDED', {}],
      ['MODIFIED', { ip: '10.0.0.9' }],
    ]);
    expect(r).toEqual([['add'], ['remove', 'add']]);
    expect(
      run([
        ['ADDED', {}],
        ['MODIFIED', { phase: 'Failed' }],
      ]),
    ).toEqual([['add'], ['remove']]);
  });
});

describe('PodWorkers: ownership by pod UID', () => {
  function setup(urls: string[] = [], dpSize = 1) {
    const config = parseRouterConfig({ workers: { urls }, health: { disabled: true } });
    const clock = new FakeClock();
    const fleet = createFleetFromConfig(config, {
      clock,
      random: seededRandom(1),
      metrics: new MetricsRegistry(),
    });
    const logs: { level: string; msg: string }[] = [];
    const logger = createLogger({
      level: 'debug',
      json: true,
      sink: (l, level) => logs.push({ level, msg: JSON.parse(l).msg }),
      now: () => clock.now(),
    });
    const probed: string[] = [];
    const workers = new PodWorkers(
      { fleet, logger, refreshWorkers: async (only) => void probed.push(...(only ?? [])) },
      RULES,
      dpSize,
    );
    return { fleet, logs, probed, workers };
  }

  it('adds with the pod as source, probes at once; suspended workers get no new requests', () => {
    const t = setup();
    t.workers.handle('ADDED', pod());
    expect(t.fleet.getWorker('http://10.0.0.1:8000')?.source).toEqual({
      discovery: 'kubernetes',
      pod: 'p1',
      uid: 'u1',
      namespace: 'ns',
    });
    expect(t.probed).toEqual(['http://10.0.0.1:8000']);
    const lease = t.fleet.route({});
    expect(lease.ok).toBe(true);
    t.workers.handle('MODIFIED', pod({ ready: false }));
    expect(t.fleet.route({})).toMatchObject({ ok: false, code: 'no_available_workers' });
    // Deleted while a request is in flight: it drains, then is forgotten.
    t.workers.handle('DELETED', pod({ ready: false }));
    expect(t.fleet.getWorker('http://10.0.0.1:8000')?.draining).toBe(true);
    if (lease.ok) t.fleet.settle(lease.lease, { kind: 'success', status: 200 });
    expect(t.fleet.listWorkers()).toEqual([]);
    expect(t.workers.countByRole().get('regular') ?? 0).toBe(0);
  });

  it('a static worker at the pod URL is never suspended or removed; the conflict is logged once', () => {
    const t = setup(['http://10.0.0.1:8000']);
    t.workers.handle('ADDED', pod());
    t.workers.handle('MODIFIED', pod());
    t.workers.handle('MODIFIED', pod({ ready: false }));
    t.workers.handle('MODIFIED', pod());
    t.workers.handle('DELETED', pod());
    const w = t.fleet.getWorker('http://10.0.0.1:8000');
    expect(w).toMatchObject({ draining: false });
    expect(w?.source).toBeUndefined();
    expect(w?.suspended).toBeUndefined();
    expect(t.logs.filter((l) => l.msg.startsWith('discovered pod not added'))).toHaveLength(1);
  });

  it("a new pod at a removed pod's IP waits for its drain, then is added", () => {
    const t = setup();
    t.workers.handle('ADDED', pod());
    const lease = t.fleet.route({});
    t.workers.handle('DELETED', pod());
    t.workers.handle('ADDED', pod({ uid: 'u2', name: 'p2' }));
    expect(t.workers.waiting).toBe(1);
    expect(t.workers.retryWaiting()).toBe(1);
    if (lease.ok) t.fleet.settle(lease.lease, { kind: 'success', status: 200 });
    expect(t.workers.retryWaiting()).toBe(0);
    expect(t.fleet.getWorker('http://10.0.0.1:8000')?.source?.uid).toBe('u2');
  });

  it('--intra-node-data-parallel-size: one worker per rank, all suspended and removed together', () => {
    const t = setup([], 2);
    t.workers.handle('ADDED', pod());
    expect(t.fleet.listWorkers().map((w) => w.id)).toEqual([
      'http://10.0.0.1:8000@0',
      'http://10.0.0.1:8000@1',
    ]);
    expect(t.workers.countByRole().get('regular')).toBe(2);
    t.workers.handle('MODIFIED', pod({ ready: false }));
    expect(t.fleet.listWorkers().map((w) => w.suspended)).toEqual([true, true]);
    t.workers.handle('DELETED', pod({ ready: false }));
    expect(t.fleet.listWorkers()).toEqual([]);
  });

  it('a pod re-created under the same name (new UID) replaces the old one', () => {
    const t = setup();
    t.workers.handle('ADDED', pod());
    t.workers.handle('MODIFIED', pod({ uid: 'u2', ip: '10.0.0.2' }));
    expect(t.fleet.listWorkers().map((w) => [w.url, w.source?.uid])).toEqual([
      ['http://10.0.0.2:8000', 'u2'],
    ]);
  });
});

describe('watchPlan', () => {
  it('PD: one watch per role selector, each added to --selector; roles needed with PD', () => {
    const config = parseRouterConfig({
      pd: { enabled: true },
      discovery: {
        mode: 'k8s',
        selector: ['app=vllm'],
        prefillSelector: ['role=p'],
        decodeSelector: ['role=d'],
      },
    });
    expect(watchPlan(config).map((t) => [t.role, t.labelSelector])).toEqual([
      ['prefill', 'app=vllm,role=p'],
      ['decode', 'app=vllm,role=d'],
    ]);
    expect(() =>
      watchPlan(parseRouterConfig({ pd: { enabled: true }, discovery: { mode: 'k8s', selector: ['a=b'] } })),
    ).toThrow(/needs pod roles/);
    expect(() => watchPlan(parseRouterConfig({ discovery: { mode: 'k8s' } }))).toThrow(
      /every pod of the cluster/,
    );
  });
});
