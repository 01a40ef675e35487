/** String operations on the prefix tree's labels: private copies and fast common-prefix lengths. */

/**
 * A copy of `s` that does not share memory with the string it was sliced from. In V8 a slice of
 * 13+ characters is a view that keeps its whole parent alive (a 100 kB prompt for a 20-character
 * label). Joining two pieces writes the characters into one new flat string: a single object, where
 * a slice of a fresh concatenation would keep a view and its flat copy (two objects, 33 bytes more,
 * about twice the time).
 */
export function ownCopy(s: string): string {
  return s.length < 13 ? s : [s.slice(0, 1), s.slice(1)].join('');
}

/**
 * Length of the common prefix of `label` from `from` and `text` from `pos`, at most `max` (which
 * both have room for). Slices are views and `===` on flat strings is a memory compare, tens of
 * times faster than a character loop (or `startsWith`) on long prompts; a divergence is found by
 * bisection, in time linear in `max`.
 */
export function commonLength(label: string, from: number, text: string, pos: number, max: number): number {
  const whole = from === 0 && max === label.length;
  if (text.slice(pos, pos + max) === (whole ? label : label.slice(from, from + max))) return max;
  let lo = 0; // [0, lo) matches
  let hi = max - 1; // [0, hi + 1) does not
  while (lo < hi) {
    if (hi - lo < 32) {
      while (lo < hi && label.charCodeAt(from + lo) === text.charCodeAt(pos + lo)) lo++;
      return lo;
    }
    // [0, lo) is known to match: only [lo, mid) is compared, so the bisection reads each
    // character about twice in all, not log2(length) times.
    const mid = (lo + hi + 1) >>> 1;
    if (text.slice(pos + lo, pos + mid) === label.slice(from + lo, from + mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
