/** The tables `npm run bench:pd` prints (bench/pd.ts measures). */
import type { RunningSimEngine } from '../src/sim/node.ts';
import { quantile, spread } from './pd-support.ts';

export const MODES = ['unified', 'PD NIXL', 'PD Mooncake', 'PD Mooncake concurrent'] as const;
export type Mode = (typeof MODES)[number];

export interface Level {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
}

export interface Overhead {
  ttft: number[];
  total: number[];
  cpuMsPerReq: number[];
  errors: number;
}

/** What the run was, for the table captions. */
export interface Setup {
  sim: { ttftMs: number; blockMs: number; blockChars: number; tokens: number; itlMs: number };
  sharedChars: number;
  ownChars: number;
  concurrencies: number[];
  requestsAt: (k: number) => number;
  repeats: number;
  pinned: boolean;
  latencyRequests: number;
  cpuRequests: number;
  cpuConcurrency: number;
}

const transferOf = (body: unknown) =>
  (body as { kv_transfer_params?: { transfer_id?: string } } | null)?.kv_transfer_params?.transfer_id;

/** Mooncake: by how much each decode reached its engine before its prefill's answer was over. */
export function aheadMs(engines: RunningSimEngine[]): number[] {
  const ends = new Map<string, number>();
  for (const e of engines.slice(0, 2)) {
    for (const l of e.engine.log) {
      const id = transferOf(l.body);
      if (id !== undefined && l.tEndMs !== null) ends.set(id, l.tEndMs);
    }
  }
  const ahead: number[] = [];
  for (const e of engines.slice(2)) {
    for (const l of e.engine.log) {
      const end = ends.get(transferOf(l.body) ?? '');
      if (end !== undefined) ahead.push(end - l.tMs);
    }
  }
  return ahead;
}

export function describeAhead(ahead: number[]): string {
  if (ahead.length === 0) return '';
  const early = ahead.filter((a) => a > 0);
  const by = early.length > 0 ? `, median ${quantile(early, 0.5).toFixed(1)} ms ahead` : '';
  return `; decodes at their engine before their prefill's answer ended: ${early.length} of ${ahead.length}${by}`;
}

const ratios = (a: number[], b: number[]) => a.map((v, i) => v / (b[i] as number));
const diffs = (a: number[], b: number[]) => a.map((v, i) => v - (b[i] as number));

export function printPart1(results: Record<Mode, Level[][]>, legs: Record<Mode, string>, setup: Setup): void {
  const { sim: SIM, concurrencies: CONCURRENCIES, requestsAt } = setup;
  console.log(
    `\nPart 1: 4 simulated engines (TTFT ${SIM.ttftMs} ms + ${SIM.blockMs} ms per uncached block of ` +
      `${SIM.blockChars} chars, ${SIM.tokens} tokens at ${SIM.itlMs} ms), prompts of a ${setup.sharedChars}-char ` +
      `shared system prompt + ${setup.ownChars} distinct chars, streamed; round_robin; requests per level ` +
      `${CONCURRENCIES.map((c, k) => `c${c}: ${requestsAt(k)}`).join(', ')}; ${setup.repeats} repeats, ` +
      `median (min–max); a p99 of fewer than 100 requests is the slowest one` +
      `${setup.pinned ? '; routers on CPU 0, engines + client on CPU 1' : ''}\n`,
  );
  console.log(
    '| mode | c | TTFT p50 ms | TTFT p99 ms | req/s | TTFT p50 ÷ unified | req/s ÷ unified | errors |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const mode of MODES) {
    CONCURRENCIES.forEach((c, k) => {
      const levels = results[mode][k] as Level[];
      const base = results.unified[k] as Level[];
      const pick = (ls: Level[], f: keyof Level) => ls.map((l) => l[f]);
      const ratio = (f: keyof Level) =>
        mode === 'unified' ? '1' : spread(ratios(pick(levels, f), pick(base, f)), 2);
      console.log(
        `| ${mode} | ${c} | ${spread(pick(levels, 'p50'))} | ${spread(pick(levels, 'p99'))} | ` +
          `${spread(pick(levels, 'rps'))} | ${ratio('p50')} | ${ratio('rps')} | ` +
          `${pick(levels, 'errors').reduce((a, b) => a + b, 0)} |`,
      );
    });
  }
  console.log(
    `\nRequests per engine in the last run of each mode (p0 / p1 / d0 / d1); Mooncake, over all runs:`,
  );
  for (const mode of MODES) console.log(`- ${mode}: ${legs[mode]}`);
  console.log('\nMooncake concurrent dispatch vs sequential (TTFT p50, paired per repeat):');
  CONCURRENCIES.forEach((c, k) => {
    const seq = (results['PD Mooncake'][k] as Level[]).map((l) => l.p50);
    const con = (results['PD Mooncake concurrent'][k] as Level[]).map((l) => l.p50);
    console.log(
      `- c=${c}: saves ${spread(diffs(seq, con), 2)} ms (sequential ${spread(seq)} → concurrent ${spread(con)})`,
    );
  });
}

export function printPart2(out: Record<string, Overhead>, setup: Setup): void {
  console.log(
    `\nPart 2: zero-latency engines, same prompts; latency: ${setup.latencyRequests} streamed requests per ` +
      `target at c=1, the targets in turn (p50); router CPU: ${setup.cpuRequests} requests per router, both ` +
      `routers at once (c=${setup.cpuConcurrency} in all, interleaved), utime+stime of each router process ` +
      `(/proc/<pid>/stat); ${setup.repeats} repeats, median (min–max)\n`,
  );
  console.log(
    '| target | TTFT p50 ms | total p50 ms | TTFT added vs direct | router CPU ms/req | CPU ÷ regular | errors |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const entries = Object.entries(out);
  const [direct, directTwo, regular] = entries.map(([, o]) => o) as [Overhead, Overhead, Overhead];
  for (const [name, o] of entries) {
    const isPd = name.startsWith('PD');
    const baseline = isPd ? directTwo : name.startsWith('regular') ? direct : undefined;
    const added = baseline ? spread(diffs(o.ttft, baseline.ttft), 2) : '–';
    const cpu = o.cpuMsPerReq.length > 0 ? spread(o.cpuMsPerReq, 3) : '–';
    const cpuRatio = o.cpuMsPerReq.length > 0 ? spread(ratios(o.cpuMsPerReq, regular.cpuMsPerReq), 2) : '–';
    console.log(
      `| ${name} | ${spread(o.ttft, 2)} | ${spread(o.total, 2)} | ${added} | ${cpu} | ${cpuRatio} | ${o.errors} |`,
    );
  }
  const pd = entries[3]?.[1] as Overhead;
  console.log(
    `\nTTFT added vs direct: regular router vs one engine; PD router vs the same two legs sent by the ` +
      `client. PD router vs one engine: +${spread(diffs(pd.ttft, direct.ttft), 2)} ms.`,
  );
}
