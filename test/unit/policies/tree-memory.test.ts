import { describe, expect, it } from 'vitest';
import type { RouterConfig } from '../../../src/core/config/schema.ts';
import type { PolicyWorker } from '../../../src/core/policies/policy.ts';
import { RadixTree } from '../../../src/core/policies/radix-tree.ts';
import { createPolicy } from '../../../src/core/policies/registry.ts';
import {
  labelBytes,
  NODE_BYTES,
  nodeBytes,
  TENANT_WORD_BYTES,
} from '../../../src/core/policies/tree-memory.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { testPolicyContext } from '../../support/policy-context.ts';
import { makeWorkers, metricValue } from './support.ts';

const all = () => true;

let seed = 7;
const rand = () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 4294967296;
};
const word = (n: number) => Array.from({ length: n }, () => 'abcd'[Math.floor(rand() * 4)]).join('');

describe('prefix tree memory estimate', () => {
  it('sizes labels as V8 stores them: one byte per Latin-1 character, two otherwise', () => {
    expect(labelBytes('abc')).toBe(16 + 8);
    expect(labelBytes('a'.repeat(100))).toBe(16 + 104);
    expect(labelBytes('é'.repeat(100))).toBe(16 + 104);
    expect(labelBytes('你'.repeat(100))).toBe(16 + 200);
  });

  it('charges every node and label, not just the characters', () => {
    const t = new RadixTree();
    const one = nodeBytes(1);
    expect(one).toBe(NODE_BYTES + TENANT_WORD_BYTES);
    t.insert('system prompt, then question one', 'a');
    // One leaf under the root: its row, edge and tenant word, and its label.
    expect(t.bytes).toBe(one + labelBytes('system prompt, then question one'));
    t.insert('system prompt, then question two', 'b');
    // A split: an inner node holding both tenants, two leaves.
    const expected =
      3 * one + labelBytes('system prompt, then question ') + labelBytes('one') + labelBytes('two');
    expect(t.bytes).toBe(expected);
    expect(t.size).toBe('system prompt, then question '.length + 6);
    // A distinct prompt costs tens of bytes more than its characters.
    const before = t.bytes;
    t.insert('system prompt, then question three', 'a');
    expect(t.bytes - before).toBeGreaterThanOrEqual(2 * one);
  });

  it('widens every node by a tenant word past 32 tenants, and frees them as they go', () => {
    const t = new RadixTree();
    const text = (i: number) => `shared prefix, then worker ${String.fromCharCode(65 + i)}`;
    for (let i = 0; i < 32; i++) t.insert(text(i), `w${i}`);
    const narrow = t.bytes;
    for (let i = 32; i < 40; i++) t.insert(text(i), `w${i}`);
    const s = t.stats();
    expect(s.nodes).toBe(41); // the shared prefix and 40 leaves
    expect(s.tenantEntries).toBe(40 + 40);
    expect(t.bytes).toBe(s.bytes);
    // Every node now has two tenant words.
    expect(t.bytes - narrow).toBe(33 * TENANT_WORD_BYTES + 8 * (nodeBytes(2) + labelBytes('h')));
    expect(t.match(text(39), (x) => x === 'w39')).toEqual({ matched: text(39).length, tenants: ['w39'] });
    expect(t.match(text(3), (x) => x === 'w3' || x === 'w39')).toEqual({
      matched: text(3).length,
      tenants: ['w3'],
    });
    for (let i = 0; i < 40; i++) t.removeTenant(`w${i}`);
    expect(t.bytes).toBe(0);
    expect(t.size).toBe(0);
    expect(t.tenantSizes().size).toBe(0);
  });

  it('keeps the running estimate equal to a recount through inserts, splits, evictions and removals', () => {
    const t = new RadixTree();
    for (let i = 0; i < 3000; i++) {
      const text = `${word(3)} ${word(Math.floor(rand() * 60))}${i % 7 === 0 ? ' 你好' : ''}`;
      t.insert(text, `w${Math.floor(rand() * 3)}`);
      if (i % 500 === 499) t.evict(Number.POSITIVE_INFINITY, t.bytes * 0.6);
      if (i % 1000 === 999) t.removeTenant('w1');
      if (i % 100 === 0) expect(t.stats().bytes).toBe(t.bytes);
    }
    const stats = t.stats();
    expect(stats.bytes).toBe(t.bytes);
    // Every leaf is listed (stats() checks it); an inner node is not once eviction passed it over.
    expect(stats.listed).toBeGreaterThanOrEqual(stats.nodes - stats.innerNodes);
    expect(stats.listed).toBeLessThanOrEqual(stats.nodes);
    t.removeTenant('w0');
    t.removeTenant('w1');
    t.removeTenant('w2');
    expect(t.bytes).toBe(0);
    expect(t.size).toBe(0);
  });

  it('evicts by recency without a scan: a recently used path survives, inner nodes go after their leaves', () => {
    const t = new RadixTree();
    const shared = 'system: the shared prompt of every conversation. ';
    for (let i = 0; i < 200; i++) t.insert(`${shared}user ${i}: ${word(30)}`, 'a');
    const recent = `${shared}user 0: the newest turn`;
    t.insert(recent, 'a'); // touches the shared prefix and the `user ` inner nodes again
    const oneLeaf = nodeBytes(1) + 200;
    t.evict(Number.POSITIVE_INFINITY, oneLeaf * 3);
    expect(t.match(recent, all).matched).toBe(recent.length);
    const s = t.stats();
    expect(s.listed).toBeGreaterThanOrEqual(s.nodes - s.innerNodes);
    expect(s.bytes).toBe(t.bytes);
    expect(t.bytes).toBeLessThanOrEqual(oneLeaf * 3);
  });

  it('passes over a prefix that has children, and takes it right after its last leaf', () => {
    const sizeOf = (...texts: string[]) => {
      const t = new RadixTree();
      for (const text of texts) t.insert(text, 'a');
      return t.bytes;
    };
    const prefix = 'shared prefix / ';
    const question = `${prefix}first question`;
    const other = 'another prompt entirely, newest of all';
    const build = () => {
      const t = new RadixTree();
      t.insert(prefix, 'a'); // the oldest node of the list...
      t.insert(question, 'a'); // ...stays where it was: this insert ended below it
      t.insert(other, 'a');
      return t;
    };
    // Room for the prefix and the newest text: the prefix is passed over, its leaf goes, and the
    // prefix, a leaf now, is the oldest but fits.
    const kept = build();
    kept.evict(Number.POSITIVE_INFINITY, sizeOf(prefix, other));
    expect(kept.match(question, all).matched).toBe(prefix.length);
    expect(kept.match(other, all).matched).toBe(other.length);
    // Room for the newest text only: the prefix goes next, before the newer leaf.
    const gone = build();
    gone.evict(Number.POSITIVE_INFINITY, sizeOf(other));
    expect(gone.match(question, all).matched).toBe(0);
    expect(gone.match(other, all).matched).toBe(other.length);
    expect(gone.stats().nodes).toBe(1);
  });

  it('keeps a shared prefix while any leaf below it is newer than what is evicted', () => {
    const t = new RadixTree();
    t.insert('shared prefix / first question', 'a');
    t.insert('shared prefix / second question', 'a');
    t.insert('another prompt entirely, newest of all', 'a');
    // Two evictions: the oldest leaf, then the next oldest, which must be the other leaf, not the
    // inner node above it (that would take the newer leaf with it).
    const prefixOnly = new RadixTree();
    prefixOnly.insert('shared prefix / ', 'a');
    prefixOnly.insert('another prompt entirely, newest of all', 'a');
    t.evict(Number.POSITIVE_INFINITY, prefixOnly.bytes);
    expect(t.match('shared prefix / second question', all).matched).toBe('shared prefix / '.length);
    expect(t.match('another prompt entirely, newest of all', all).matched).toBe(38);
  });

  it('evicts least-recently-used leaves by estimated bytes, whatever the character count', () => {
    const t = new RadixTree();
    for (let i = 0; i < 1000; i++) t.insert(`prompt ${i} ${word(20)}`, 'a');
    const full = t.bytes;
    t.evict(Number.POSITIVE_INFINITY, full / 2);
    expect(t.bytes).toBeLessThanOrEqual(full / 2);
    expect(t.bytes).toBeGreaterThan(full / 2 - 2 * (nodeBytes(1) + 200));
    expect(t.stats().bytes).toBe(t.bytes);
    // The newest prompts stayed, the oldest went.
    expect(t.match('prompt 999 ', all).matched).toBe('prompt 999 '.length);
    expect(t.match('prompt 1 ', all).matched).toBeLessThan('prompt 1 '.length);
    t.evict(Number.POSITIVE_INFINITY, 0);
    expect(t.bytes).toBe(0);
  });
});

function cacheAware(settings: Partial<RouterConfig['policy']>) {
  const clock = new FakeClock();
  const ctx = testPolicyContext({ clock, settings, pool: 'regular:m' });
  return { policy: createPolicy('cache_aware', ctx), clock, metrics: ctx.metrics };
}

const pick = (p: ReturnType<typeof createPolicy>, ws: readonly PolicyWorker[], text: string) =>
  (p.select(ws, { text }) as PolicyWorker).id;

describe('cache_aware bounded by --max-tree-bytes', () => {
  it('holds the tree within the byte bound under distinct short prompts, far below --max-tree-size characters', async () => {
    const max = 256 * 1024;
    const { policy, metrics } = cacheAware({ maxTreeBytes: max });
    const ws = makeWorkers(2);
    let chars = 0;
    for (let i = 0; i < 5000; i++) {
      const text = `system: be brief.\nuser: question ${i}: ${word(20)}\n`;
      chars += text.length;
      pick(policy, ws, text);
      if (i % 250 === 0) {
        const bytes = await metricValue(metrics, 'vllm_router_tree_bytes', { pool: 'regular:m' });
        expect(bytes).toBeLessThanOrEqual(max);
      }
    }
    // Far fewer characters than the default --max-tree-size: only the byte bound can act.
    expect(chars).toBeLessThan(1_000_000);
    const bytes = await metricValue(metrics, 'vllm_router_tree_bytes', { pool: 'regular:m' });
    expect(bytes).toBeLessThanOrEqual(max);
    expect(bytes).toBeGreaterThan(max * 0.5);
    // The newest prompt is still held whole: sent again, it is a cache hit.
    const last = `system: be brief.\nuser: question 5000: ${word(20)}\n`;
    const home = pick(policy, ws, last);
    for (const w of ws) if (w.id === home) (w as { load: number }).load = 3;
    expect(pick(policy, ws, last)).toBe(home);
  });

  it('tracks only a prefix of a text too large for the tree, so one huge prompt cannot flush it', async () => {
    const max = 64 * 1024;
    const { policy, metrics, clock } = cacheAware({ maxTreeBytes: max });
    const ws = makeWorkers(2);
    const kept = `user: a prompt worth keeping ${word(40)}`;
    const home = pick(policy, ws, kept);
    clock.advance(1); // the huge prompt is the most recent: LRU eviction would take the other first
    pick(policy, ws, `huge: ${'x'.repeat(10 * max)}`);
    expect(await metricValue(metrics, 'vllm_router_tree_bytes', { pool: 'regular:m' })).toBeLessThanOrEqual(
      max,
    );
    for (const w of ws) if (w.id === home) (w as { load: number }).load = 3;
    expect(pick(policy, ws, kept)).toBe(home);
  });

  it('still honours --max-tree-size in characters (vLLM Router) when it is the tighter bound', async () => {
    const { policy, metrics } = cacheAware({ maxTreeSize: 2_000 });
    const ws = makeWorkers(1);
    for (let i = 0; i < 200; i++) pick(policy, ws, `prompt ${i} ${word(30)}`);
    expect(await metricValue(metrics, 'vllm_router_tree_size', { worker: 'w0' })).toBeLessThanOrEqual(2_000);
  });
});
