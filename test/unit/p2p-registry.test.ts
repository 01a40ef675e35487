import { encode } from '@msgpack/msgpack';
import { describe, expect, it, vi } from 'vitest';
import { P2pRegistry, type P2pRegistryOptions } from '../../src/adapters/p2p/registry.ts';
import { parseRegistration } from '../../src/adapters/p2p/wire.ts';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { createFleetFromConfig } from '../../src/core/fleet/from-config.ts';
import { createLogger } from '../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { FakeClock, seededRandom } from '../support/fake-clock.ts';

const P_URL = 'http://10.0.0.1:8100';
const D_URL = 'http://10.0.0.2:8200';

/** A ROUTER message as the socket delivers it: [identity, msgpack payload]. */
function msg(type: string, http: string, zmq: string): Uint8Array[] {
  return [new TextEncoder().encode(zmq), encode({ type, http_address: http, zmq_address: zmq })];
}

function setup(options: { pd?: Record<string, unknown>; dpSize?: number } & P2pRegistryOptions = {}) {
  const { pd = {}, dpSize = 1, ...registryOptions } = options;
  const config = parseRouterConfig({
    pd: { enabled: true, ...pd },
    workers: { dpSize },
    health: { disabled: true },
  });
  const clock = new FakeClock();
  const metrics = new MetricsRegistry();
  const logs: { level: string; msg: string }[] = [];
  const logger = createLogger({
    level: 'debug',
    json: true,
    sink: (line, level) => logs.push({ level, msg: JSON.parse(line).msg }),
    now: () => clock.now(),
  });
  const fleet = createFleetFromConfig(config, { clock, random: seededRandom(1), metrics });
  const refreshed: string[][] = [];
  const registry = new P2pRegistry({ dpSize, ...registryOptions });
  const addWorker = vi.spyOn(fleet, 'addWorker');
  const removeWorker = vi.spyOn(fleet, 'removeWorker');
  registry.attach({
    fleet,
    logger,
    metrics,
    clock,
    refreshWorkers: async (only) => void refreshed.push([...(only ?? [])]),
  });
  const sample = async (name: string) => {
    const text = await metrics.render();
    return Object.fromEntries(
      text
        .split('\n')
        .filter((l) => l.startsWith(name))
        .map((l) => [l.slice(name.length, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]),
    );
  };
  return { fleet, clock, registry, refreshed, logs, addWorker, removeWorker, sample };
}

describe('P2P-NCCL registration', () => {
  it('first registration adds the worker with its role once and has it probed at once', async () => {
    const t = setup();
    expect(t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'))).toBe('new');
    expect(t.registry.onMessage(msg('D', '10.0.0.2:8200', '10.0.0.2:22001'))).toBe('new');
    expect(t.fleet.listWorkers().map((w) => [w.url, w.role])).toEqual([
      [P_URL, 'prefill'],
      [D_URL, 'decode'],
    ]);
    expect(t.refreshed).toEqual([[P_URL], [D_URL]]);
    expect(t.registry.zmqAddress(P_URL)).toBe('10.0.0.1:21001');
    expect(t.registry.zmqAddress(D_URL)).toBe('10.0.0.2:22001');
    expect(t.logs.filter((l) => l.msg === 'P2P worker registered')).toHaveLength(2);
    expect(await t.sample('vllm_router_pd_registered_workers')).toEqual({
      '{role="prefill"}': 1,
      '{role="decode"}': 1,
    });
  });

  it('refreshes only mark the worker seen: never re-added, its load kept', async () => {
    const t = setup();
    t.registry.onMessage(msg('D', '10.0.0.2:8200', '10.0.0.2:22001'));
    const routed = t.fleet.route({ role: 'decode' });
    expect(routed.ok).toBe(true);
    for (let i = 0; i < 3; i++) {
      t.clock.advance(3000);
      expect(t.registry.onMessage(msg('D', '10.0.0.2:8200', '10.0.0.2:22001'))).toBe('refresh');
    }
    expect(t.addWorker).toHaveBeenCalledTimes(1);
    expect(t.removeWorker).not.toHaveBeenCalled();
    expect(t.refreshed).toHaveLength(1);
    expect(t.fleet.listWorkers()).toMatchObject([{ url: D_URL, load: 1, draining: false }]);
    expect(await t.sample('vllm_router_pd_registrations_total')).toMatchObject({
      '{result="new"}': 1,
      '{result="refresh"}': 3,
    });
  });

  it('a registration silent for 5 s is removed; the worker drains its request in flight', async () => {
    const t = setup();
    t.registry.onMessage(msg('D', '10.0.0.2:8200', '10.0.0.2:22001'));
    const routed = t.fleet.route({ role: 'decode' });
    if (!routed.ok) throw new Error('not routed');
    t.clock.advance(4000);
    expect(t.fleet.listWorkers()).toMatchObject([{ draining: false }]);
    expect(t.registry.zmqAddress(D_URL)).toBe('10.0.0.2:22001');
    t.clock.advance(1000);
    expect(t.removeWorker).toHaveBeenCalledWith(D_URL);
    expect(t.fleet.listWorkers()).toMatchObject([{ url: D_URL, draining: true, load: 1 }]);
    expect(t.registry.zmqAddress(D_URL)).toBeUndefined();
    expect(t.logs).toContainEqual({ level: 'warn', msg: 'P2P worker registration expired: worker removed' });
    expect(await t.sample('vllm_router_pd_registered_workers')).toMatchObject({ '{role="decode"}': 0 });
    t.fleet.settle(routed.lease, { kind: 'success', status: 200 });
    expect(t.fleet.listWorkers()).toEqual([]);
  });

  it('refreshes every 3 s keep it registered (the production default is 5 s)', () => {
    const t = setup();
    t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'));
    for (let i = 0; i < 10; i++) {
      t.clock.advance(3000);
      t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'));
    }
    t.clock.advance(4999);
    expect(t.fleet.listWorkers()).toHaveLength(1);
    t.clock.advance(1000);
    expect(t.fleet.listWorkers()).toHaveLength(0);
  });

  it('a changed zmq_address updates the mapping; the worker stays as it is', () => {
    const t = setup();
    t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'));
    expect(t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.9:29999'))).toBe('refresh');
    expect(t.registry.zmqAddress(P_URL)).toBe('10.0.0.9:29999');
    expect(t.addWorker).toHaveBeenCalledTimes(1);
    expect(t.logs.map((l) => l.msg)).toContain('P2P worker changed its ZMQ address');
  });

  it('a changed type re-adds the worker in its new role, once its old self has drained', () => {
    const t = setup();
    t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'));
    const routed = t.fleet.route({ role: 'prefill' });
    if (!routed.ok) throw new Error('not routed');
    expect(t.registry.onMessage(msg('D', '10.0.0.1:8100', '10.0.0.1:21001'))).toBe('new');
    expect(t.fleet.listWorkers()).toMatchObject([{ role: 'prefill', draining: true }]);
    t.fleet.settle(routed.lease, { kind: 'success', status: 200 });
    t.clock.advance(1000);
    expect(t.fleet.listWorkers()).toMatchObject([{ url: P_URL, role: 'decode', draining: false }]);
    expect(t.registry.zmqAddress(P_URL)).toBe('10.0.0.1:21001');
  });

  it('malformed payloads are counted, logged once per state change, and change nothing', async () => {
    const t = setup();
    const bad: Uint8Array[][] = [
      [new Uint8Array([1]), new Uint8Array([0xc1])],
      [new Uint8Array([1]), encode(['P', '10.0.0.1:8100'])],
      msg('X', '10.0.0.1:8100', '10.0.0.1:21001'),
      msg('P', '10.0.0.1', '10.0.0.1:21001'),
      msg('P', 'user@10.0.0.1:8100', '10.0.0.1:21001'),
      msg('P', '10.0.0.1:8100', 'not an address'),
      [encode({ type: 'P', http_address: '10.0.0.1:8100', zmq_address: '10.0.0.1:21001' })],
      [
        new Uint8Array([1]),
        encode({ type: 'P', http_address: 'a:1', zmq_address: 'b:2', pad: 'x'.repeat(5000) }),
      ],
    ];
    for (const frames of bad) expect(t.registry.onMessage(frames)).toBe('invalid');
    expect(t.fleet.listWorkers()).toEqual([]);
    const warnings = () => t.logs.filter((l) => l.level === 'warn');
    expect(warnings()).toHaveLength(1);
    expect(t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'))).toBe('new');
    expect(t.logs.map((l) => l.msg)).toContain('P2P registrations valid again');
    t.registry.onMessage(bad[0] as Uint8Array[]);
    expect(warnings()).toHaveLength(2);
    expect(await t.sample('vllm_router_pd_registrations_total')).toMatchObject({ '{result="invalid"}': 9 });
  });

  it('never removes a worker it did not add (a static --prefill), but uses its ZMQ address', () => {
    const t = setup({ pd: { prefill: [{ url: P_URL }] } });
    expect(t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'))).toBe('new');
    expect(t.addWorker).not.toHaveBeenCalled();
    expect(t.registry.zmqAddress(P_URL)).toBe('10.0.0.1:21001');
    t.clock.advance(6000);
    expect(t.removeWorker).not.toHaveBeenCalled();
    expect(t.fleet.listWorkers()).toMatchObject([{ url: P_URL, role: 'prefill', draining: false }]);
    expect(t.registry.zmqAddress(P_URL)).toBeUndefined();
  });

  it('adds one worker per data-parallel rank and removes them all on expiry', () => {
    const t = setup({ dpSize: 2 });
    t.registry.onMessage(msg('D', '10.0.0.2:8200', '10.0.0.2:22001'));
    expect(t.fleet.listWorkers().map((w) => w.id)).toEqual([`${D_URL}@0`, `${D_URL}@1`]);
    t.clock.advance(5000);
    expect(t.fleet.listWorkers()).toEqual([]);
  });

  it('refuses hosts outside --worker-url-allowlist', () => {
    const t = setup({ allowlist: ['10.0.0.2'] });
    expect(t.registry.onMessage(msg('P', '10.0.0.1:8100', '10.0.0.1:21001'))).toBe('invalid');
    expect(t.registry.onMessage(msg('D', '10.0.0.2:8200', '10.0.0.2:22001'))).toBe('new');
    expect(t.fleet.listWorkers().map((w) => w.url)).toEqual([D_URL]);
  });

  it('close() stops the sweep', async () => {
    const t = setup();
    expect(t.clock.pendingTimers).toBe(1);
    await t.registry.close();
    expect(t.clock.pendingTimers).toBe(0);
  });

  it('parses the payload vLLM sends', () => {
    const payload = encode({ type: 'D', http_address: '[::1]:8200', zmq_address: '[::1]:22001' });
    expect(parseRegistration(payload)).toEqual({
      ok: true,
      value: { role: 'decode', httpAddress: '[::1]:8200', zmqAddress: '[::1]:22001' },
    });
  });
});
