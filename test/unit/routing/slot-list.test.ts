/** SlotList: the in-flight and waiting groups kept in reused slots instead of a Set. */
import { describe, expect, it } from 'vitest';
import { SlotList } from '../../../src/core/routing/slot-list.ts';

const member = (name: string, at = 0) => ({ name, at, slot: -1 });

describe('SlotList', () => {
  it('adds once, deletes once, and tells the member its slot', () => {
    const list = new SlotList<ReturnType<typeof member>>();
    const a = member('a');
    list.add(a);
    list.add(a); // already a member
    expect(list.size).toBe(1);
    expect(a.slot).toBe(0);
    expect(list.delete(a)).toBe(true);
    expect(list.delete(a)).toBe(false);
    expect(a.slot).toBe(-1);
    expect(list.size).toBe(0);
  });

  it('reuses a freed slot and never confuses its old member with the new one', () => {
    const list = new SlotList<ReturnType<typeof member>>();
    const [a, b, c] = [member('a'), member('b'), member('c')];
    list.add(a);
    list.add(b);
    list.delete(a);
    list.add(c);
    expect(c.slot).toBe(0); // a's slot
    expect(list.delete({ ...c, slot: 0 })).toBe(false); // a look-alike is not the member
    expect(
      list
        .members()
        .map((m) => m.name)
        .sort(),
    ).toEqual(['b', 'c']);
  });

  it('finds the smallest key wherever its slot is', () => {
    const list = new SlotList<ReturnType<typeof member>>();
    const first = member('first', 1);
    const older = member('older', 2);
    list.add(first);
    list.add(older);
    list.delete(first);
    const newest = member('newest', 3);
    list.add(newest); // takes slot 0, ahead of the older member
    expect(list.min((m) => m.at)?.name).toBe('older');
    expect(new SlotList<ReturnType<typeof member>>().min((m) => m.at)).toBeUndefined();
  });

  it('members() is a copy: members can leave while a caller walks it', () => {
    const list = new SlotList<ReturnType<typeof member>>();
    const all = [member('a'), member('b'), member('c')];
    for (const m of all) list.add(m);
    for (const m of list.members()) list.delete(m);
    expect(list.size).toBe(0);
    expect(list.members()).toEqual([]);
    list.add(all[1] as ReturnType<typeof member>);
    expect(all[1]?.slot).toBe(0); // emptied: the slots start over
  });
});
