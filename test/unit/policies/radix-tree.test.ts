import { describe, expect, it } from 'vitest';
import { RadixTree } from '../../../src/core/policies/radix-tree.ts';

const all = () => true;

describe('RadixTree', () => {
  it('matches the longest prefix and reports who holds it', () => {
    const t = new RadixTree();
    t.insert('hello world', 'a');
    t.insert('hello there', 'b');
    expect(t.match('hello world, again', all)).toEqual({ matched: 11, tenants: ['a'] });
    expect(t.match('hello th', all)).toEqual({ matched: 8, tenants: ['b'] });
    const shared = t.match('hello you', all);
    expect(shared.matched).toBe(6);
    expect(new Set(shared.tenants)).toEqual(new Set(['a', 'b']));
    expect(t.match('goodbye', all)).toEqual({ matched: 0, tenants: [] });
    // A split does not change the characters held: 'hello ' + 'world' + 'there'.
    expect(t.size).toBe(16);
    expect(t.tenantSizes().get('a')).toBe(11);
    expect(t.tenantSizes().get('b')).toBe(11);
  });

  it('finds the longest common prefix with anything inserted (long labels, divergence anywhere)', () => {
    let seed = 12345;
    const rand = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 4294967296;
    };
    const base = Array.from({ length: 3000 }, () => 'ab'[Math.floor(rand() * 2)]).join('');
    const variant = () => {
      const cut = Math.floor(rand() * base.length);
      return (
        base.slice(0, cut) +
        (base[cut] === 'a' ? 'b' : 'a') +
        base.slice(cut + 1, cut + 1 + Math.floor(rand() * 200))
      );
    };
    const inserted: string[] = [];
    const t = new RadixTree();
    for (let i = 0; i < 60; i++) {
      const s = variant();
      inserted.push(s);
      t.insert(s, `w${i % 3}`);
    }
    const lcp = (a: string, b: string) => {
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i++;
      return i;
    };
    for (let q = 0; q < 200; q++) {
      const query = variant();
      const want = Math.max(...inserted.map((s) => lcp(s, query)));
      expect(t.match(query, all).matched).toBe(want);
    }
  });

  it('falls back to a shorter prefix held by an accepted tenant', () => {
    const t = new RadixTree();
    t.insert('abcdef', 'a');
    t.insert('abcxyz', 'b');
    expect(t.match('abcdef', (x) => x !== 'a')).toEqual({ matched: 3, tenants: ['b'] });
    expect(t.match('abcdef', () => false)).toEqual({ matched: 0, tenants: [] });
  });

  it('evicts least-recently-used leaves first, down to the target', () => {
    const t = new RadixTree();
    t.insert(`old-${'x'.repeat(100)}`, 'a');
    t.insert(`new-${'y'.repeat(100)}`, 'a');
    t.insert(`mid-${'z'.repeat(100)}`, 'b');
    t.insert(`old-${'x'.repeat(100)}`, 'b'); // touched again: now the most recent
    expect(t.size).toBe(312);
    t.evict(250);
    expect(t.size).toBe(208);
    expect(t.match(`new-${'y'.repeat(100)}`, all).matched).toBe(0);
    expect(t.match(`old-${'x'.repeat(100)}`, all).matched).toBe(104);
    expect(t.match(`mid-${'z'.repeat(100)}`, all).matched).toBe(104);
    expect(t.tenantSizes().get('a')).toBe(104);
  });

  it('evicts a parent once its last child is gone', () => {
    const t = new RadixTree();
    t.insert('prefix-one', 'a');
    t.insert('prefix-two', 'a');
    t.evict(0);
    expect(t.size).toBe(0);
    expect(t.tenantSizes().size).toBe(0);
    expect(t.match('prefix-one', all).matched).toBe(0);
  });

  it('stays within the bound after far more text than it holds', () => {
    const t = new RadixTree();
    const max = 5_000;
    for (let i = 0; i < 2_000; i++) {
      t.insert(`conversation ${i % 50}: ${'lorem ipsum '.repeat(i % 13)} turn ${i}`, `w${i % 4}`);
      if (t.size > max) t.evict(max);
      expect(t.size).toBeLessThanOrEqual(max);
    }
    let perTenant = 0;
    for (const n of t.tenantSizes().values()) perTenant += n;
    expect(perTenant).toBeGreaterThanOrEqual(t.size);
  });

  it('removes a tenant, dropping nodes nobody else holds', () => {
    const t = new RadixTree();
    t.insert('shared-a', 'a');
    t.insert('shared-b', 'b');
    t.removeTenant('a');
    expect(t.size).toBe(8);
    expect(t.tenantSizes().has('a')).toBe(false);
    expect(t.match('shared-a', all)).toEqual({ matched: 7, tenants: ['b'] });
  });

  it('matchForInsert + recordMatched decide on the match and leaves the tree as match then insert would', () => {
    let seed = 99;
    const rand = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 4294967296;
    };
    const word = () =>
      Array.from({ length: 1 + Math.floor(rand() * 6) }, () => 'abc'[Math.floor(rand() * 3)]);
    const twoWalks = new RadixTree();
    const oneWalk = new RadixTree();
    const accept = (t: string) => t !== 'w3';
    for (let i = 0; i < 400; i++) {
      const text = Array.from({ length: 1 + Math.floor(rand() * 5) }, () => word().join('')).join(' ');
      const tenant = `w${Math.floor(rand() * 4)}`;
      const expected = twoWalks.match(text, accept);
      twoWalks.insert(text, tenant);
      const tenants: string[] = [];
      const seen = { matched: oneWalk.matchForInsert(text, accept, tenants), tenants };
      oneWalk.recordMatched(tenant);
      expect(seen).toEqual(expected);
      if (i % 50 === 49) {
        twoWalks.evict(twoWalks.size * 0.8);
        oneWalk.evict(oneWalk.size * 0.8);
      }
      expect(oneWalk.stats()).toEqual(twoWalks.stats());
    }
    expect(oneWalk.bytes).toBe(twoWalks.bytes);
    expect([...oneWalk.tenantSizes()].sort()).toEqual([...twoWalks.tenantSizes()].sort());
  });
});
