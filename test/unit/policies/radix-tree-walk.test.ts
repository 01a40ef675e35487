/**
 * matchForInsert then recordMatched compares the text with the labels once, not once to match and
 * again to insert.
 */
import { describe, expect, it, vi } from 'vitest';

const labels = vi.hoisted(() => ({ compares: 0 }));
vi.mock('../../../src/core/policies/tree-labels.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/core/policies/tree-labels.ts')>();
  return {
    ...real,
    commonLength: (...args: Parameters<typeof real.commonLength>) => {
      labels.compares++;
      return real.commonLength(...args);
    },
  };
});

const { RadixTree } = await import('../../../src/core/policies/radix-tree.ts');

describe('RadixTree.matchForInsert', () => {
  it('walks the text down the tree once', () => {
    const t = new RadixTree();
    const system = `system: ${'be brief. '.repeat(50)}\n`;
    t.insert(`${system}user: first question\n`, 'a');
    t.insert(`${system}user: second question\n`, 'b');
    const text = `${system}user: second question\nassistant: an answer\nuser: third\n`;
    labels.compares = 0;
    t.match(text, () => true);
    const perWalk = labels.compares;
    expect(perWalk).toBeGreaterThanOrEqual(2); // the shared prefix node, then the second question's

    labels.compares = 0;
    const held: string[] = [];
    const matched = t.matchForInsert(text, () => true, held);
    t.recordMatched('b');
    expect(labels.compares).toBe(perWalk);
    expect(held).toEqual(['b']);
    expect(matched).toBe(`${system}user: second question\n`.length);
    expect(t.match(text, (x) => x === 'b').matched).toBe(text.length);
  });

  it('refuses to record a walk that another use of the tree voided', () => {
    const t = new RadixTree();
    const two = 'system: a\nuser: two\n';
    t.insert('system: a\nuser: one\n', 'a');
    t.matchForInsert(two, () => true, []);
    t.match('system: b\n', () => true);
    expect(() => t.recordMatched('b')).toThrow(/without its matchForInsert/);
    t.matchForInsert(two, () => true, []);
    t.recordMatched('b');
    expect(() => t.recordMatched('b')).toThrow(/without its matchForInsert/);
    expect(t.match(two, (x) => x === 'b').matched).toBe(two.length);
  });
});
