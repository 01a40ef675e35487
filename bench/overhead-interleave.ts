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

export async function interleavedBursts(
  servers: Server[],
  body: Body,
  options: { bursts: number; n: number; c: number; warmup?: number },
): Promise<Bursts> {
  const { bursts, n, c } = options;
  for (const s of servers) await closedLoop(s.url, body, c, options.warmup ?? 3000);
  const cpu = servers.map(() => [] as number[]);
  const rps = servers.map(() => [] as number[]);
  const forward = servers.map((_, i) => i);
  for (let b = 0; b < bursts; b++) {
    for (const i of b % 2 === 0 ? forward : [...forward].reverse()) {
      const s = servers[i] as Server;
      const before = treeCpuMs(s.pid);
      const t = await closedLoop(s.url, body, c, n);
      cpu[i]?.push(((treeCpuMs(s.pid) - before) * 1000) / n);
      rps[i]?.push(t.rps);
    }
  }
  return { cpu, rps };
}

export const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
/** The middle value; of an even count, the mean of the two middle ones. */
export function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

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
  const p50s = servers.map(() => [] as number[]);
  const forward = servers.map((_, i) => i);
  for (const s of servers) await streamTtft(s.url, body, options.c, options.seconds); // warm-up
  for (let r = 0; r < options.rounds; r++) {
    for (const i of r % 2 === 0 ? forward : [...forward].reverse()) {
      const t = await streamTtft((servers[i] as Server).url, body, options.c, options.seconds);
      p50s[i]?.push(t.p50Ms);
    }
  }
  return p50s;
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
  const out = servers.map(() => [] as Throughput[]);
  const forward = servers.map((_, i) => i);
  for (const s of servers) await wrk(options.dir, s.url, body, 32, 1); // warm-up
  for (let r = 0; r < options.rounds; r++) {
    for (const i of r % 2 === 0 ? forward : [...forward].reverse()) {
      out[i]?.push(await wrk(options.dir, (servers[i] as Server).url, body, 32, options.seconds));
    }
  }
  return out;
}
