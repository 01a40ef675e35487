import { afterEach, describe, expect, it, vi } from 'vitest';
import { commonLength as commonFrom, ownCopy } from '../../../src/core/policies/tree-labels.ts';

/** The label from its start against the text from `pos`, as far as both go. */
const commonLength = (label: string, text: string, pos: number) =>
  commonFrom(label, 0, text, pos, Math.min(label.length, text.length - pos));

const lcp = (label: string, text: string, pos: number) => {
  let i = 0;
  while (i < label.length && pos + i < text.length && label[i] === text[pos + i]) i++;
  return i;
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('commonLength', () => {
  it('is the common prefix length for a divergence at every position, from any offset', () => {
    for (const length of [1, 2, 31, 32, 33, 64, 100, 257]) {
      const label = ownCopy(Array.from({ length }, (_, i) => 'abcdefgh'[i % 8]).join(''));
      for (const pos of [0, 5]) {
        const lead = 'z'.repeat(pos);
        expect(commonLength(label, `${lead}${label}tail`, pos)).toBe(length);
        for (let at = 0; at < length; at++) {
          const text = `${lead}${label.slice(0, at)}#${label.slice(at + 1)}`;
          expect(commonLength(label, text, pos)).toBe(at);
          const short = `${lead}${label.slice(0, at)}`; // the text ends inside the label
          expect(commonLength(label, short, pos)).toBe(lcp(label, short, pos));
        }
      }
    }
  });

  it('reads a long label about twice in all when the text diverges inside it, not once per bisection step', () => {
    const label = ownCopy('lorem ipsum dolor sit amet, '.repeat(2400)); // 67,200 characters
    const at = 40_001;
    const text = `${label.slice(0, at)}#${label.slice(at + 1)}`;
    const slice = vi.spyOn(String.prototype, 'slice');
    const got = commonLength(label, text, 0);
    const calls = slice.mock.calls.map((c) => c as unknown as [number, number]);
    slice.mockRestore();
    expect(got).toBe(at);
    let read = 0;
    for (const [from, to] of calls) read += to - from;
    // Both strings are sliced: 2 × (the first whole compare + halving steps) ≈ 4 label lengths.
    expect(read).toBeLessThanOrEqual(5 * label.length);
  });
});
