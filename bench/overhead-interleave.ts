/**
 * CPU per request measured with interleaved bursts: every proxy runs at once (all on CPU 0 when
 * pinned), closed-loop bursts of `n` requests at concurrency `c` go to each in turn, the order
 * reversed every other burst, and each proxy's CPU time (its threads' run time from /proc, bench/pd-support.ts; its
 * children included) is taken per burst. A change in the machine's speed during the run then falls on all
 * proxies alike, which one proxy measured after another cannot promise on a noisy VM. Used by
 * `npm run bench` (its CPU table) and `npm run bench:ab`.
 */
import { readFileSync } from 'node:fs';
import { type Body, closedLoop, streamTtft, type Throughput, wrk } from './overhead-load.ts';
import type { Server } from './overhead-procs.ts';
import { processCpuMs } from './pd-support.ts';

/** CPU time of a process and its direct children (nginx's worker), in ms. */
export function treeCpuMs(pid: number): number {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    // no children file: count the process alone
  }
  return [pid, ...children].reduce((sum, p) => sum + processCpuMs(p), 0);
}

export interface Bursts {
  /** Per proxy (in the order given), CPU µs per request of each burst. */
  cpu: number[][];
  /** Per proxy, requests/s of each burst. */
  rps: number[][];
}

/**
 * `rounds` rounds of `measure` against every server in turn, the order reversed every other round;
 * per server (in the order given), each round's result.
 */
async function alternating<T>(
  servers: Server[],
  rounds: number,
  measure: (s: Server) => Promise<T>,
): Promise<T[][]> {
  const out = servers.map(() => [] as T[]);
  const forward = servers.map((_, i) => i);
  for (let r = 0; r < rounds; r++) {
    for (const i of r % 2 === 0 ? forward : [...forward].reverse()) {
      out[i]?.push(await measure(servers[i] as Server));
    }
  }
  return out;
}

export async function interleavedBursts(
  servers: Server[],
  body: Body,
  options: { bursts: number; n: number; c: number; warmup?: number },
): Promise<Bursts> {
  const { bursts, n, c } = options;
  for (const s of servers) await closedLoop(s.url, body, c, options.warmup ?? 3000);
  const runs = await alternating(servers, bursts, async (s) => {
    const before = treeCpuMs(s.pid);
    const t = await closedLoop(s.url, body, c, n);
    return { cpu: ((treeCpuMs(s.pid) - before) * 1000) / n, rps: t.rps };
  });
  return { cpu: runs.map((r) => r.map((b) => b.cpu)), rps: runs.map((r) => r.map((b) => b.rps)) };
}

export const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
/** The middle value; of an even count, the mean of the two middle ones. */
export function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Values as median (min–max). */
export function spread(values: number[], digits = 2): string {
  const f = (v: number) => v.toFixed(digits);
  return `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

/** Round by round, `mine` ÷ `base`: median (min–max) of the ratios. */
export const roundRatios = (mine: number[], base: number[], digits = 2) =>
  spread(
    mine.map((v, r) => v / (base[r] as number)),
    digits,
  );

/** Round by round, `mine` − `base`: median (min–max) of the differences. */
export const roundDifferences = (mine: number[], base: number[]) =>
  spread(mine.map((v, r) => v - (base[r] as number)));

/**
 * Time to the first body chunk measured the same way: streaming rounds of `seconds` at concurrency
 * `c` go to each proxy in turn (the order reversed every other round); per proxy, the p50 of each
 * round.
 */
export async function interleavedTtft(
  servers: Server[],
  body: string,
  options: { rounds: number; c: number; seconds: number },
): Promise<number[][]> {
  for (const s of servers) await streamTtft(s.url, body, options.c, options.seconds); // warm-up
  const runs = await alternating(servers, options.rounds, (s) =>
    streamTtft(s.url, body, options.c, options.seconds),
  );
  return runs.map((r) => r.map((t) => t.p50Ms));
}

/**
 * Throughput measured the same way, with wrk (one thread, c32) saturating each proxy in turn:
 * `rounds` rounds of `seconds` per proxy, the order reversed every other round. Per proxy, each
 * round's result, so ratios can be taken round by round (both sides of a ratio then share the
 * machine's state of that round).
 */
export async function interleavedThroughput(
  servers: Server[],
  body: string,
  options: { rounds: number; seconds: number; dir: string },
): Promise<Throughput[][]> {
  for (const s of servers) await wrk(options.dir, s.url, body, 32, 1); // warm-up
  return alternating(servers, options.rounds, (s) => wrk(options.dir, s.url, body, 32, options.seconds));
}
