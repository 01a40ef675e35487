import { describe, expect, it } from 'vitest';
import { IdTable } from '../../../src/core/fleet/id-table.ts';
import { seededRandom } from '../../support/fake-clock.ts';

/** The table and a Map given the same operations must agree on every lookup and every size. */
function agree(table: IdTable<string>, model: Map<number, string>, probes: number[]): void {
  expect(table.size).toBe(model.size);
  for (const id of probes) expect(table.get(id)).toBe(model.get(id));
  expect(new Map(table.entries())).toEqual(model);
}

describe('IdTable', () => {
  it('adds, finds and deletes by id', () => {
    const t = new IdTable<string>();
    t.add(1, 'a');
    t.add(2, 'b');
    expect(t.get(1)).toBe('a');
    expect(t.get(2)).toBe('b');
    expect(t.get(3)).toBeUndefined();
    expect(t.delete(1)).toBe('a');
    expect(t.delete(1)).toBeUndefined(); // once
    expect(t.get(1)).toBeUndefined();
    expect(t.get(2)).toBe('b');
    expect(t.size).toBe(1);
  });

  it('finds nothing under ids that are not positive integers, and refuses to store them', () => {
    const t = new IdTable<string>();
    t.add(16, 'x'); // the slot an id of 0 would look in
    for (const id of [0, -16, Number.NaN, 16.5]) {
      expect(t.get(id)).toBeUndefined();
      expect(t.delete(id)).toBeUndefined();
    }
    for (const id of [0, -1, 1.5, Number.NaN, 2 ** 53]) expect(() => t.add(id, 'y')).toThrow(RangeError);
    expect(t.get(16)).toBe('x');
  });

  it('keeps every entry reachable when ids collide and entries in the middle of a run leave', () => {
    const t = new IdTable<string>();
    const model = new Map<number, string>();
    // 16 slots at first: ids 16 apart share a home slot; neighbours run into each other.
    for (const id of [3, 19, 35, 4, 20, 15, 31, 47, 1]) {
      t.add(id, `v${id}`);
      model.set(id, `v${id}`);
    }
    const probes = [...model.keys(), 51, 63, 5, 2];
    for (const id of [19, 15, 3, 47, 4]) {
      expect(t.delete(id)).toBe(model.get(id));
      model.delete(id);
      agree(t, model, probes);
    }
  });

  it('agrees with a Map over a long run of requests in flight, some of them long-lived', () => {
    const random = seededRandom(7);
    const t = new IdTable<string>();
    const model = new Map<number, string>();
    let next = 1;
    const live: number[] = [];
    for (let step = 0; step < 20_000; step++) {
      // Bursts up to a few hundred in flight, then back down; one in 50 stays for the whole run.
      const target = step % 4000 < 2000 ? 300 : 5;
      if (live.length < target && random() < 0.7) {
        const id = next++;
        t.add(id, `v${id}`);
        model.set(id, `v${id}`);
        if (random() >= 0.02) live.push(id);
      } else if (live.length > 0) {
        const at = Math.floor(random() * live.length);
        const id = live[at] as number;
        live[at] = live[live.length - 1] as number;
        live.pop();
        expect(t.delete(id)).toBe(`v${id}`);
        model.delete(id);
      }
      if (step % 997 === 0) agree(t, model, [...model.keys(), next, next + 1, 1, Math.max(1, next - 300)]);
    }
    agree(t, model, [...model.keys(), next]);
  });

  it('works with ids past 2^32, and again after it emptied', () => {
    const t = new IdTable<number>();
    const base = 2 ** 40;
    for (let i = 0; i < 3000; i++) t.add(base + i, i);
    for (let i = 0; i < 3000; i++) expect(t.get(base + i)).toBe(i);
    for (let i = 0; i < 3000; i++) expect(t.delete(base + i)).toBe(i);
    expect(t.size).toBe(0);
    expect(t.entries()).toEqual([]);
    t.add(5, 5);
    expect(t.get(5)).toBe(5);
  });
});
