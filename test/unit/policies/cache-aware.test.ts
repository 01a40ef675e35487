import { describe, expect, it } from 'vitest';
import type { RouterConfig } from '../../../src/core/config/schema.ts';
import type { PolicyWorker } from '../../../src/core/policies/policy.ts';
import { createPolicy } from '../../../src/core/policies/registry.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { testPolicyContext } from '../../support/policy-context.ts';
import { makeFleet, makeWorkers, metricValue, routedId, type TestWorker, tally, urls } from './support.ts';

function cacheAware(settings: Partial<RouterConfig['policy']> = {}) {
  const clock = new FakeClock();
  const ctx = testPolicyContext({ clock, settings });
  return { policy: createPolicy('cache_aware', ctx), clock, metrics: ctx.metrics };
}

const system = (i: number) =>
  `system: You are assistant number ${i}. ${'Follow the house style. '.repeat(40)}\n`;
const pick = (p: ReturnType<typeof createPolicy>, ws: readonly PolicyWorker[], text?: string) =>
  (p.select(ws, text === undefined ? {} : { text }) as PolicyWorker).id;

async function treeTotal(metrics: Parameters<typeof metricValue>[0], ws: readonly PolicyWorker[]) {
  let n = 0;
  for (const w of ws) n += await metricValue(metrics, 'vllm_router_tree_size', { worker: w.id });
  return n;
}

describe('cache_aware', () => {
  it('sends a repeated long prompt, and its continuations, back to the same worker', async () => {
    const { policy, metrics } = cacheAware();
    const ws = makeWorkers(4);
    const prompt = `${system(1)}user: summarise the report\n`;
    const home = pick(policy, ws, prompt);
    // Other traffic and modest load on the home worker do not break the affinity.
    for (let i = 2; i < 8; i++) pick(policy, ws, `${system(i)}user: hi\n`);
    for (const w of ws) if (w.id === home) w.load = 5;
    for (let turn = 0; turn < 5; turn++) {
      expect(pick(policy, ws, prompt)).toBe(home);
      expect(pick(policy, ws, `${prompt}assistant: done ${turn}\nuser: more\n`)).toBe(home);
    }
    expect(await metricValue(metrics, 'vllm_router_cache_hits_total')).toBe(10);
    expect(await metricValue(metrics, 'vllm_router_cache_misses_total')).toBe(7);
  });

  it('sends new prompts (below the cache threshold) to the least-loaded worker, rotating ties', () => {
    const { policy } = cacheAware();
    const ws = makeWorkers(4);
    const first = Array.from({ length: 8 }, (_, i) => pick(policy, ws, `${system(100 + i)}user: q\n`));
    expect([...tally(first).values()]).toEqual([2, 2, 2, 2]);
    (ws[2] as TestWorker).load = 1;
    for (let i = 0; i < 6; i++) expect(pick(policy, ws, `${system(200 + i)}user: q\n`)).not.toBe('w2');
  });

  it('matches among more candidates than a scan handles, and only among the candidates given', () => {
    const { policy } = cacheAware();
    const ws = makeWorkers(12);
    const homes = Array.from({ length: 24 }, (_, i) => pick(policy, ws, `${system(300 + i)}user: q\n`));
    expect(new Set(homes).size).toBe(12);
    for (let i = 0; i < 24; i++) expect(pick(policy, ws, `${system(300 + i)}user: q\n`)).toBe(homes[i]);
    // Without its home among the candidates, a prompt is a miss: the least-loaded of the rest.
    const others = ws.filter((w) => w.id !== homes[0]);
    const second = pick(policy, others, `${system(300)}user: q\n`);
    expect(second).not.toBe(homes[0]);
    // Now two workers hold it: either may take it.
    expect([homes[0], second]).toContain(pick(policy, ws, `${system(300)}user: q\n`));
    // A few candidates (a scan): a hit on the one holding the prompt, not the other.
    const few = ws.filter((w) => w.id === homes[2] || w.id === homes[3]);
    for (const i of [2, 3]) expect(pick(policy, few, `${system(300 + i)}user: q\n`)).toBe(homes[i]);
  });

  it('treats a match at or below --cache-threshold as a miss', () => {
    const { policy } = cacheAware({ cacheThreshold: 0.5 });
    const ws = makeWorkers(2);
    const home = pick(policy, ws, 'a'.repeat(100));
    for (const w of ws) if (w.id === home) w.load = 1;
    // 100 of 199 characters match: above 0.5, a hit despite the load.
    expect(pick(policy, ws, `${'a'.repeat(100)}${'c'.repeat(99)}`)).toBe(home);
    // 100 of 200 characters match: exactly 0.5 is not above the threshold, a miss.
    expect(pick(policy, ws, `${'a'.repeat(100)}${'b'.repeat(100)}`)).not.toBe(home);
  });

  it('never picks a worker with phantom load 250 while the others are idle (spill gate)', async () => {
    const { policy, metrics } = cacheAware();
    const ws = makeWorkers(4);
    const prompt = `${system(9)}user: hello\n`;
    const home = pick(policy, ws, prompt);
    const hot = ws.find((w) => w.id === home) as TestWorker;
    hot.load = 250;
    const picks = Array.from({ length: 50 }, (_, i) => pick(policy, ws, `${prompt}user: turn ${i}\n`));
    expect(picks).not.toContain(home);
    expect(await metricValue(metrics, 'vllm_router_load_balancing_events_total')).toBeGreaterThan(0);
    // The spilled prompt was inserted for its new worker: the prefix now lives there too.
    hot.load = 0;
    const replica = picks[0] as string;
    for (const w of ws) if (w.id !== replica && w.id !== home) w.load = 3;
    expect([home, replica]).toContain(pick(policy, ws, `${prompt}user: turn 0\n`));
  });

  it('keeps the cache home under moderate imbalance (below mean + --balance-abs-threshold)', () => {
    const { policy } = cacheAware();
    const ws = makeWorkers(4);
    const prompt = `${system(3)}user: hello\n`;
    const home = pick(policy, ws, prompt);
    for (const w of ws) w.load = w.id === home ? 60 : 0;
    expect(pick(policy, ws, prompt)).toBe(home);
  });

  it('routes requests without text to the least-loaded worker and leaves the tree alone', async () => {
    const { policy, metrics } = cacheAware();
    const ws = makeWorkers(3);
    (ws[0] as TestWorker).load = 2;
    for (let i = 0; i < 6; i++) expect(pick(policy, ws)).not.toBe('w0');
    expect(await treeTotal(metrics, ws)).toBe(0);
  });

  it('stays within --max-tree-size after inserting far more text', async () => {
    const max = 20_000;
    const { policy, metrics } = cacheAware({ maxTreeSize: max });
    const ws = makeWorkers(4);
    let inserted = 0;
    for (let i = 0; i < 400; i++) {
      const text = `${i}:${system(i)}`;
      inserted += text.length;
      pick(policy, ws, text);
      // Distinct prompts share (almost) nothing: the per-worker sizes add up to the tree size.
      if (i % 50 === 0) expect(await treeTotal(metrics, ws)).toBeLessThanOrEqual(max);
    }
    expect(inserted).toBeGreaterThan(10 * max);
    const total = await treeTotal(metrics, ws);
    expect(total).toBeLessThanOrEqual(max);
    expect(total).toBeGreaterThan(max * 0.5);
  });

  it('evicts every --eviction-interval on the injected clock, without a timer', async () => {
    const { policy, clock, metrics } = cacheAware({ maxTreeSize: 1000, evictionIntervalSecs: 60 });
    const ws = makeWorkers(1);
    pick(policy, ws, 'a'.repeat(950)); // under the limit, above the 90 % low-water mark
    expect(await treeTotal(metrics, ws)).toBe(950);
    expect(clock.pendingTimers).toBe(0);
    clock.advance(59_000);
    pick(policy, ws);
    expect(await treeTotal(metrics, ws)).toBe(950);
    clock.advance(1_000);
    pick(policy, ws);
    expect(await treeTotal(metrics, ws)).toBeLessThanOrEqual(900);
  });

  it('forgets a removed worker: its prompts go elsewhere, by load', async () => {
    const { fleet, metrics } = makeFleet(
      'cache_aware',
      urls(3).map((url) => ({ url })),
    );
    const prompt = `${system(5)}user: hi\n`;
    const r = fleet.route({ text: prompt });
    if (!r.ok) throw new Error('no route');
    fleet.settle(r.lease, { kind: 'success' });
    const home = r.worker.id;
    expect(await metricValue(metrics, 'vllm_router_tree_size', { worker: home })).toBe(prompt.length);
    fleet.removeWorker(home);
    expect(await metricValue(metrics, 'vllm_router_tree_size', { worker: home })).toBe(0);
    expect(routedId(fleet.route({ text: prompt }))).not.toBe(home);
  });

  it('keeps conversations apart through the Fleet while leases are held (no pile-up)', () => {
    const { fleet } = makeFleet(
      'cache_aware',
      urls(4).map((url) => ({ url })),
    );
    const homes = Array.from({ length: 8 }, (_, c) =>
      routedId(fleet.route({ text: `${system(c)}user: 0\n` })),
    );
    expect([...tally(homes).values()]).toEqual([2, 2, 2, 2]);
    for (let turn = 1; turn < 4; turn++) {
      for (let c = 0; c < 8; c++) {
        const text = `${system(c)}user: 0\nassistant: a\nuser: ${turn}\n`;
        expect(routedId(fleet.route({ text }))).toBe(homes[c]);
      }
    }
  });
});
