import { describe, expect, it } from 'vitest';
import { ChildIndex } from '../../../src/core/policies/tree-children.ts';

let seed = 3;
const rand = (n: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return Math.floor((seed / 4294967296) * n);
};

const ROWS = 20_000;

/** Edge keys in two plain columns: what the tree's rows answer, without a tree. */
function columns() {
  const parent = new Int32Array(ROWS);
  const code = new Uint16Array(ROWS);
  return {
    parent,
    code,
    parentOf: (r: number) => parent[r] as number,
    codeOf: (r: number) => code[r] as number,
  };
}

describe('ChildIndex (the prefix tree edges)', () => {
  it('agrees with a Map through random adds, deletes and re-keyed rows, across growth and wrap-around', () => {
    const keys = columns();
    const index = new ChildIndex(keys);
    const model = new Map<string, number>(); // `${parent}/${code}` → child row
    const inTable = new Set<number>();
    const check = () => {
      for (let p = 0; p < 400; p++)
        for (let c = 0; c < 8; c++) expect(index.get(p, c)).toBe(model.get(`${p}/${c}`) ?? -1);
      expect(index.size).toBe(model.size);
    };
    // Few parents and codes: long probe runs, deletes in the middle of runs.
    for (let op = 0; op < 60_000; op++) {
      const row = 1 + rand(ROWS - 1);
      const parent = rand(op < 30_000 ? 400 : 40);
      const code = rand(8);
      const key = `${parent}/${code}`;
      if (inTable.has(row)) {
        const old = `${keys.parent[row]}/${keys.code[row]}`;
        index.delete(row);
        inTable.delete(row);
        model.delete(old);
        // Half the time, re-key the row and add it back (a split moves a row under a new parent).
        if (rand(2) === 0 && !model.has(key)) {
          keys.parent[row] = parent;
          keys.code[row] = code;
          index.add(row);
          inTable.add(row);
          model.set(key, row);
        }
      } else if (!model.has(key)) {
        keys.parent[row] = parent;
        keys.code[row] = code;
        index.add(row);
        inTable.add(row);
        model.set(key, row);
      }
      if (op % 997 === 0) check();
    }
    check();
  });

  it('keeps the table at most half full and empties on clear', () => {
    const keys = columns();
    const index = new ChildIndex(keys);
    for (let i = 1; i < 10_000; i++) {
      keys.parent[i] = i - 1;
      keys.code[i] = 97;
      index.add(i);
    }
    expect(index.bytes / 4).toBeGreaterThanOrEqual(2 * index.size);
    for (let i = 1; i < 10_000; i++) expect(index.get(i - 1, 97)).toBe(i);
    expect(index.get(5, 98)).toBe(-1);
    index.clear();
    expect(index.size).toBe(0);
    expect(index.get(5, 97)).toBe(-1);
  });
});
