/** The tables of `npm run bench`: median (min–max) over repeats; ratios taken within each repeat. */
import type { Throughput } from './overhead-load.ts';
import { spread } from './pd-support.ts';

export interface Run {
  target: string;
  nonstream: Throughput;
  cpuUsPerRequest: number;
  ttftC1: number;
  ttftC32: number;
  errors: number;
}

const LABELS: Record<string, string> = {
  floor: 'floor (minimal undici proxy)',
  floor_one_engine: 'floor, one engine only',
  cache_aware: 'router, cache_aware (default)',
  round_robin: 'router, round_robin',
  round_robin_one_engine: 'router, round_robin, one engine only',
  nginx: 'nginx (1 worker)',
  deno: 'router on Deno, cache_aware',
  deno_floor: 'floor on Deno (Deno.serve + fetch)',
};

export function printTable(runs: Run[][], targets: string[]): void {
  const of = (target: string, pick: (run: Run, floor: Run | undefined) => number) =>
    runs.flatMap((round) => {
      const run = round.find((r) => r.target === target);
      const floor = round.find((r) => r.target === 'floor');
      return run ? [pick(run, floor)] : [];
    });
  const hasFloor = targets.includes('floor');
  const ratio = (a: number, b: number | undefined) => (b === undefined ? Number.NaN : a / b);
  console.log('\nNon-streaming, c32, zero-latency engines (median (min–max) of repeats):\n');
  console.log(
    '| target | req/s | p50 ms | p99 ms | CPU µs/request | req/s ÷ floor | p99 ÷ floor | CPU ÷ floor | errors |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const t of targets) {
    const cells = [
      spread(
        of(t, (r) => r.nonstream.rps),
        0,
      ),
      spread(
        of(t, (r) => r.nonstream.p50Ms),
        2,
      ),
      spread(
        of(t, (r) => r.nonstream.p99Ms),
        2,
      ),
      spread(
        of(t, (r) => r.cpuUsPerRequest),
        0,
      ),
      hasFloor
        ? spread(
            of(t, (r, f) => ratio(r.nonstream.rps, f?.nonstream.rps)),
            2,
          )
        : '–',
      hasFloor
        ? spread(
            of(t, (r, f) => ratio(r.nonstream.p99Ms, f?.nonstream.p99Ms)),
            2,
          )
        : '–',
      hasFloor
        ? spread(
            of(t, (r, f) => ratio(r.cpuUsPerRequest, f?.cpuUsPerRequest)),
            2,
          )
        : '–',
      String(of(t, (r) => r.errors).reduce((a, b) => a + b, 0)),
    ];
    console.log(`| ${LABELS[t] ?? t} | ${cells.join(' | ')} |`);
  }
  console.log(
    '\nStreaming, time to the first body chunk (engines: 5 ms to the first token, 2 ms per token):\n',
  );
  console.log('| target | TTFT c1 p50 ms | added vs floor | TTFT c32 p50 ms | added vs floor |');
  console.log('|---|---:|---:|---:|---:|');
  for (const t of targets) {
    const cells = [
      spread(
        of(t, (r) => r.ttftC1),
        2,
      ),
      hasFloor
        ? spread(
            of(t, (r, f) => r.ttftC1 - (f?.ttftC1 ?? Number.NaN)),
            2,
          )
        : '–',
      spread(
        of(t, (r) => r.ttftC32),
        2,
      ),
      hasFloor
        ? spread(
            of(t, (r, f) => r.ttftC32 - (f?.ttftC32 ?? Number.NaN)),
            2,
          )
        : '–',
    ];
    console.log(`| ${LABELS[t] ?? t} | ${cells.join(' | ')} |`);
  }
  printDenoRatios(runs);
}

/** Per repeat, `a`'s figure over `b`'s (repeats missing either skipped). */
function pairs(runs: Run[][], a: string, b: string, pick: (run: Run) => number): number[] {
  return runs.flatMap((round) => {
    const x = round.find((r) => r.target === a);
    const y = round.find((r) => r.target === b);
    return x && y ? [pick(x) / pick(y)] : [];
  });
}

/**
 * The router on Deno against the same code on Node, and against the floor on Deno: how much of
 * the gap is Deno's own (its floor against the Node router) and how much the router adds there.
 */
function printDenoRatios(runs: Run[][]): void {
  const rps = (r: Run) => r.nonstream.rps;
  const cpu = (r: Run) => r.cpuUsPerRequest;
  const line = (label: string, a: string, b: string) => {
    const ratios = pairs(runs, a, b, rps);
    if (ratios.length === 0) return;
    console.log(`${label}: req/s ${spread(ratios, 2)}, CPU per request ${spread(pairs(runs, a, b, cpu), 2)}`);
  };
  console.log('');
  line('Deno ÷ Node, same code, cache_aware', 'deno', 'cache_aware');
  line('Floor on Deno ÷ router on Node (cache_aware)', 'deno_floor', 'cache_aware');
  line('Router on Deno ÷ floor on Deno', 'deno', 'deno_floor');
}
