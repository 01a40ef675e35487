/**
 * How far a ratio of two interleaved proxies' means can be trusted on a noisy machine.
 *
 * A `level` (0.9: 90 %) interval for mean(a) ÷ mean(b) of paired bursts (a[i] and b[i] ran in the
 * same round): a bootstrap that resamples whole rounds, so a round the host slowed for both
 * counts for both. Seeded, so one run's figures print the same every time they are computed.
 * On a shared VM one burst's CPU per request can swing by ±30 % where a change moves it by a few
 * percent: the interval says whether a ratio's distance from a target is more than that noise.
 */
export function ratioInterval(a: number[], b: number[], level = 0.9, resamples = 4000): [number, number] {
  let state = 12345;
  const draw = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return Math.floor((state / 4294967296) * a.length);
  };
  const ratios: number[] = [];
  for (let k = 0; k < resamples; k++) {
    let sa = 0;
    let sb = 0;
    for (let j = 0; j < a.length; j++) {
      const i = draw();
      sa += a[i] as number;
      sb += b[i] as number;
    }
    ratios.push(sa / sb);
  }
  ratios.sort((x, y) => x - y);
  const tail = Math.floor(((1 - level) / 2) * resamples);
  return [ratios[tail] as number, ratios[resamples - 1 - tail] as number];
}

/** `low–high` of `ratioInterval`, for a table cell. */
export function intervalText(a: number[], b: number[], digits = 3): string {
  const [low, high] = ratioInterval(a, b);
  return `${low.toFixed(digits)}–${high.toFixed(digits)}`;
}
