/**
 * What a proxy adds to the time to first token of streamed chats at c32, and where: from the
 * client's send to the engine's arrival (the proxy's work before the engine has the request) and
 * from there to the client's first chunk (the engine's own 5 ms, then the proxy's relay). The floor
 * and two routers of the working tree's dist/ (node flags NODE_FLAGS_A and NODE_FLAGS_B, to compare
 * a setting side by side) run at once on CPU 0, the engines and this client on CPU 1. A burst of
 * wrk at saturation comes first (BURST seconds per proxy, in 2 s turns): a router that has served
 * one behaves differently from a fresh one (docs/benchmarks.md, round 18). Then ROUNDS rounds of
 * 1 s of C closed-loop streams per proxy, the order reversed every other round; each request
 * carries its own x-request-id, which the engines' request logs join to their arrival time (the
 * client's and the engines' clocks are both performance.timeOrigin + now(): offsets between the
 * processes fall on every proxy alike, so the differences to the floor stand).
 *
 *   npm run build && npm run bench:ttft
 *   NODE_FLAGS_B=--allocation-site-pretenuring npm run bench:ttft   # V8's pretenuring back on in B
 *   BURST=0 ROUNDS=20 C=32 POLICY=cache_aware npm run bench:ttft
 *
 * Per proxy: the medians of the rounds' p50s, the median of the per-round differences to the
 * floor's, CPU per stream, and its young collections during the rounds (V8's --trace-gc-nvp).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { GC_FLAGS, logLength, scavenges } from './gc-trace.ts';
import { median, treeCpuMs } from './overhead-interleave.ts';
import { wrk } from './overhead-load.ts';
import {
  configureEngines,
  hasCommand,
  PIN,
  type Server,
  startEngine,
  startFloor,
  startRouter,
  WORK_DIR,
} from './overhead-procs.ts';
import { ROOT } from './revision.ts';
import { flagsOf, shortChat } from './support.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 16);
const BURST = Number(process.env.BURST ?? 20);
const C = Number(process.env.C ?? 32);
const POLICY = process.env.POLICY ?? 'cache_aware';
const FLAGS_A = flagsOf(process.env.NODE_FLAGS_A);
const FLAGS_B = flagsOf(process.env.NODE_FLAGS_B);
const now = () => performance.timeOrigin + performance.now();

interface Sent {
  id: string;
  sent: number;
  first: number;
}

/** One round: C closed-loop streams for `seconds`; every request that got a first chunk. */
async function streams(url: string, seconds: number, ids: { next: number }): Promise<Sent[]> {
  const pool = new Pool(url, { connections: C, pipelining: 1 });
  const body = shortChat(true);
  const out: Sent[] = [];
  const deadline = performance.now() + seconds * 1000;
  const client = async () => {
    while (performance.now() < deadline) {
      const one: Sent = { id: `ttft-${ids.next++}`, sent: now(), first: -1 };
      const headers = { 'content-type': 'application/json', 'x-request-id': one.id };
      await new Promise<void>((resolve) => {
        pool.request({ path: '/v1/chat/completions', method: 'POST', headers, body }, (err, answer) => {
          if (err || !answer) return resolve();
          answer.body.on('data', () => {
            if (one.first < 0) one.first = now();
          });
          answer.body.on('end', resolve);
          answer.body.on('error', () => resolve());
        });
      });
      if (one.first > 0) out.push(one);
    }
  };
  await Promise.all(Array.from({ length: C }, client));
  await pool.close();
  return out;
}

/** When each request reached an engine, by request id (the engines' request logs). */
async function arrivals(engines: Server[]): Promise<Map<string, number>> {
  const at = new Map<string, number>();
  for (const e of engines) {
    const res = await fetch(`${e.url}/admin/log`);
    const log = (await res.json()) as { tMs: number; headers: Record<string, string> }[];
    for (const entry of log) {
      const id = entry.headers['x-request-id'];
      if (id !== undefined) at.set(id, entry.tMs);
    }
  }
  return at;
}

const p50 = (values: number[]) => (values.length > 0 ? median(values) : Number.NaN);
const ms = (v: number) => v.toFixed(2);
const signed = (v: number) => (v >= 0 ? `+${ms(v)}` : ms(v));

async function main(): Promise<void> {
  if (BURST > 0 && !hasCommand('wrk')) {
    console.error('bench:ttft sends its burst with wrk (apt-get install wrk), or run it with BURST=0');
    process.exit(2);
  }
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const engines = [await startEngine(ROOT, 'e1', 1), await startEngine(ROOT, 'e2', 1)];
  const urls = engines.map((e) => e.url);
  const names = ['floor', `router A ${FLAGS_A.join(' ')}`.trim(), `router B ${FLAGS_B.join(' ')}`.trim()];
  const proxies: Server[] = [];
  try {
    proxies.push(await startFloor(ROOT, urls, 0, GC_FLAGS));
    proxies.push(
      await startRouter(ROOT, 'routerA', urls, ['--policy', POLICY], 0, [...GC_FLAGS, ...FLAGS_A]),
    );
    proxies.push(
      await startRouter(ROOT, 'routerB', urls, ['--policy', POLICY], 0, [...GC_FLAGS, ...FLAGS_B]),
    );
    console.log(
      `load average ${loadavg()[0]?.toFixed(2)}; ${POLICY}; wrk burst ${BURST} s per proxy, then ${ROUNDS} ` +
        `interleaved rounds of 1 s at c${C} (engines: 5 ms to the first token, 2 ms per token)`,
    );
    const dir = mkdtempSync(join(WORK_DIR, 'wrk-'));
    for (let s = 0; s < BURST; s += 2)
      for (const p of proxies) await wrk(dir, p.url, shortChat(false), 32, 2);
    // The engines' request logs on only now: the streams' arrivals, not the burst's requests.
    await configureEngines(engines, { 'ttft-ms': 5, 'itl-ms': 2, 'log-size': 200_000 });
    const ids = { next: 0 };
    for (const p of proxies) await streams(p.url, 1, ids); // warm-up at the new latencies
    const logs = proxies.map((p) => logLength(p.name));
    const cpu = proxies.map(() => 0);
    const rounds: Sent[][][] = proxies.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      const order = proxies.map((_, i) => i);
      if (r % 2 === 1) order.reverse();
      for (const i of order) {
        const p = proxies[i] as Server;
        const before = treeCpuMs(p.pid);
        const sent = await streams(p.url, 1, ids);
        cpu[i] = (cpu[i] as number) + treeCpuMs(p.pid) - before;
        (rounds[i] as Sent[][]).push(sent);
      }
    }
    const served = rounds.map((rs) => rs.reduce((n, s) => n + s.length, 0));
    const at = await arrivals(engines);
    type Part = (s: Sent) => number;
    const parts: Record<string, Part> = {
      ttft: (s) => s.first - s.sent,
      'client → engine': (s) => (at.get(s.id) ?? Number.NaN) - s.sent,
      'engine → first chunk': (s) => s.first - (at.get(s.id) ?? Number.NaN),
    };
    // Per proxy and part: each round's p50.
    const perRound = (i: number, part: Part) =>
      (rounds[i] as Sent[][]).map((sent) => p50(sent.map(part).filter(Number.isFinite)));
    console.log(
      '\n| proxy | first token p50 ms (added) | client → engine (added) | engine → first chunk (added) | CPU µs/stream | young collections: count, mean pause ms, promoted KB each |',
    );
    console.log('|---|---:|---:|---:|---:|---|');
    proxies.forEach((p, i) => {
      const cells = Object.values(parts).map((part) => {
        const mine = perRound(i, part);
        const floor = perRound(0, part);
        const added = mine.map((v, r) => v - (floor[r] as number)).filter(Number.isFinite);
        return i === 0
          ? ms(p50(mine))
          : `${ms(p50(mine))} (${added.length > 0 ? signed(median(added)) : '–'})`;
      });
      const gc = scavenges(p.name, logs[i] as number);
      const cpuPer = ((cpu[i] as number) * 1000) / Math.max(1, served[i] as number);
      const gcCell = `${gc.count}, ${gc.pauseMs.toFixed(2)}, ${gc.promotedKB.toFixed(0)}`;
      console.log(`| ${names[i]} | ${cells.join(' | ')} | ${cpuPer.toFixed(0)} | ${gcCell} |`);
    });
    const joined = rounds.flat(2).filter((s) => at.has(s.id)).length;
    console.log(
      `\n${joined} of ${rounds.flat(2).length} streams found in the engines' logs; load average ${loadavg()[0]?.toFixed(2)}`,
    );
  } finally {
    await Promise.all([...proxies, ...engines].map((s) => s.stop()));
  }
}

await main();
