/**
 * Proxy overhead: the router against our own minimal undici proxy (bench/floor-proxy.ts) and nginx
 * (when installed), in front of the same two simulated engines, measured one after another.
 *   npm run bench      # REPEATS=3 DURATION=5 CPU_REQUESTS=4000 STREAM_SECONDS=2 SKIP_BUILD=1
 *                      # TARGETS=floor,cache_aware,round_robin,nginx,deno,deno_floor KEEP_LOGS=1 (servers' output)
 *                      # BURSTS=12 BURST_REQUESTS=1500 TTFT_ROUNDS=8 TTFT_ROUND_SECONDS=1
 *                      # RPS_ROUNDS=10 RPS_ROUND_SECONDS=2 (interleaved wrk throughput)
 *                      # (floor_one_engine, round_robin_one_engine: the floor, the router in
 *                      # front of one engine, as cache_aware's identical prompts use it; opt-in)
 * The proxy under test has CPU 0 to itself; the engines, the load (wrk -t1 when installed, else a
 * closed-loop client) and this process share CPU 1 (taskset; no pinning without it or with one CPU).
 * Per target and repeat: non-streaming c32 requests/s and p50/p99 (zero-latency engines); the
 * proxy's CPU time per request (its threads' run time from /proc over CPU_REQUESTS requests at
 * c32, after as many unmeasured ones); streaming time to the first body chunk at c1 and c32
 * (engines: first token after 5 ms, then one every 2 ms, 16 tokens). The router runs from
 * dist/node/main.js with its defaults (info log line per request) plus --policy; repeats
 * interleave the targets.
 * Then the CPU table that the noise of a shared VM cannot skew as much: every target running at
 * once, BURSTS closed-loop bursts of BURST_REQUESTS requests at c32 sent to each in turn
 * (overhead-interleave.ts), each burst's CPU per request divided by the floor's in the same burst;
 * the time to first token measured the same way: streaming rounds at c1 and at c32 sent to each
 * target in turn, each round's p50 compared with the floor's of the same round; and, with wrk,
 * throughput measured the same way: wrk rounds at c32 to each target in turn, each round's
 * requests/s and p99 divided by the floor's (and the router on Deno's by the Node router's) of the
 * same round.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  interleavedBursts,
  interleavedThroughput,
  interleavedTtft,
  mean,
  median,
  roundDifferences,
  roundRatios,
  treeCpuMs,
} from './overhead-interleave.ts';
import { closedLoop, streamTtft, type Throughput, wrk } from './overhead-load.ts';
import {
  configureEngines as configure,
  hasCommand,
  PIN,
  type Server,
  startDenoFloor,
  startDenoRouter,
  startEngine,
  startFloor,
  startNginx,
  startRouter,
  WORK_DIR,
} from './overhead-procs.ts';
import { printTable, type Run } from './overhead-report.ts';
import { intervalText } from './ratio-interval.ts';
import { shortChat } from './support.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const REPEATS = Number(process.env.REPEATS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const CPU_REQUESTS = Number(process.env.CPU_REQUESTS ?? 4000);
const STREAM_SECONDS = Number(process.env.STREAM_SECONDS ?? 2);
const BURSTS = Number(process.env.BURSTS ?? 12);
const BURST_REQUESTS = Number(process.env.BURST_REQUESTS ?? 1500);
const TTFT_ROUNDS = Number(process.env.TTFT_ROUNDS ?? 8);
const TTFT_ROUND_SECONDS = Number(process.env.TTFT_ROUND_SECONDS ?? 1);
const RPS_ROUNDS = Number(process.env.RPS_ROUNDS ?? 10);
const RPS_ROUND_SECONDS = Number(process.env.RPS_ROUND_SECONDS ?? 2);
const WRK = hasCommand('wrk');
const NGINX = hasCommand('nginx');
const TARGETS = (process.env.TARGETS ?? 'floor,cache_aware,round_robin,nginx,deno,deno_floor')
  .split(',')
  .map((t) => t.trim())
  .filter((t) => t !== 'nginx' || NGINX);

function startTarget(target: string, engineUrls: string[]): Promise<Server> {
  if (target === 'floor') return startFloor(ROOT, engineUrls, 0);
  // The floor in front of the first engine only: what one engine serving every request costs, as
  // `cache_aware` does with the benchmark's identical prompts (opt-in: TARGETS=...,floor_one_engine).
  if (target === 'floor_one_engine') return startFloor(ROOT, engineUrls.slice(0, 1), 0, [], target);
  // The router likewise: what `cache_aware` costs over `round_robin` with the engines' work alike.
  if (target === 'round_robin_one_engine')
    return startRouter(ROOT, target, engineUrls.slice(0, 1), ['--policy', 'round_robin'], 0);
  if (target === 'nginx') return startNginx(engineUrls, 0);
  if (target === 'deno') return startDenoRouter(ROOT, engineUrls, 0);
  if (target === 'deno_floor') return startDenoFloor(ROOT, engineUrls, 0);
  return startRouter(ROOT, target, engineUrls, ['--policy', target], 0);
}

async function measure(target: string, engines: Server[]): Promise<Run> {
  const server = await startTarget(
    target,
    engines.map((e) => e.url),
  );
  try {
    await configure(engines, { 'ttft-ms': 0, 'itl-ms': 0 });
    const warm = await closedLoop(server.url, shortChat(false), 32, 2000);
    if (warm.errors > 0) throw new Error(`${target}: ${warm.errors} errors while warming up`);
    const nonstream: Throughput = WRK
      ? await wrk(WORK_DIR, server.url, shortChat(false), 32, DURATION)
      : await closedLoop(server.url, shortChat(false), 32, 0, DURATION);
    // A fresh process's first requests after a saturating burst cost more than its later ones (a
    // full collection of what wrk left, the optimizing compiler still busy): one unmeasured run of
    // CPU_REQUESTS first, then the measured one.
    const settle = await closedLoop(server.url, shortChat(false), 32, CPU_REQUESTS);
    const before = treeCpuMs(server.pid);
    const fixed = await closedLoop(server.url, shortChat(false), 32, CPU_REQUESTS);
    const cpuUsPerRequest = ((treeCpuMs(server.pid) - before) * 1000) / CPU_REQUESTS;
    await configure(engines, { 'ttft-ms': 5, 'itl-ms': 2 });
    const c1 = await streamTtft(server.url, shortChat(true), 1, STREAM_SECONDS);
    const c32 = await streamTtft(server.url, shortChat(true), 32, STREAM_SECONDS);
    const errors = nonstream.errors + settle.errors + fixed.errors + c1.errors + c32.errors;
    return { target, nonstream, cpuUsPerRequest, ttftC1: c1.p50Ms, ttftC32: c32.p50Ms, errors };
  } finally {
    await server.stop();
  }
}

/** Every target at once, CPU per request from interleaved bursts, ratios to the floor per burst. */
async function interleavedTable(engines: Server[]): Promise<void> {
  await configure(engines, { 'ttft-ms': 0, 'itl-ms': 0 });
  const servers: Server[] = [];
  try {
    for (const t of TARGETS)
      servers.push(
        await startTarget(
          t,
          engines.map((e) => e.url),
        ),
      );
    const { cpu, rps } = await interleavedBursts(servers, shortChat(false), {
      bursts: BURSTS,
      n: BURST_REQUESTS,
      c: 32,
    });
    const floor = TARGETS.indexOf('floor');
    console.log(
      `\nCPU per request, all targets running at once, ${BURSTS} interleaved bursts of ${BURST_REQUESTS} ` +
        'requests at c32 (÷ floor: of the means, with its 90 % interval over the rounds; range: the ' +
        'per-burst ratios, min–max):\n',
    );
    console.log(
      '| target | CPU µs/request (mean) | CPU ÷ floor | 90 % interval | per-burst range | req/s (median) |',
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    const floorCpu = floor < 0 ? [] : (cpu[floor] as number[]);
    TARGETS.forEach((t, i) => {
      const mine = cpu[i] as number[];
      const ratios = mine.map((v, b) => v / (floorCpu[b] as number));
      const cells =
        floor < 0
          ? ['–', '–', '–']
          : [
              (mean(mine) / mean(floorCpu)).toFixed(2),
              i === floor ? '–' : intervalText(mine, floorCpu, 2),
              `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`,
            ];
      console.log(
        `| ${t} | ${mean(mine).toFixed(1)} | ${cells.join(' | ')} | ${median(rps[i] as number[]).toFixed(0)} |`,
      );
    });
    if (WRK) await interleavedThroughputTable(servers);
    await interleavedTtftTable(servers, engines);
  } finally {
    for (const s of servers) await s.stop();
  }
}

/** Requests/s and p99 with every target running at once, in interleaved wrk rounds. */
async function interleavedThroughputTable(servers: Server[]): Promise<void> {
  const options = { rounds: RPS_ROUNDS, seconds: RPS_ROUND_SECONDS, dir: WORK_DIR };
  const runs = await interleavedThroughput(servers, shortChat(false), options);
  const rps = runs.map((r) => r.map((t) => t.rps));
  const p99 = runs.map((r) => r.map((t) => t.p99Ms));
  const floor = TARGETS.indexOf('floor');
  console.log(
    `\nThroughput, all targets running at once, ${RPS_ROUNDS} interleaved wrk rounds of ${RPS_ROUND_SECONDS} s ` +
      'at c32 per target (median of the rounds; ÷ floor: median (min–max) of the per-round ratios):\n',
  );
  console.log('| target | req/s | req/s ÷ floor | p99 ms | p99 ÷ floor | errors |');
  console.log('|---|---:|---:|---:|---:|---:|');
  TARGETS.forEach((t, i) => {
    const [mine, late] = [rps[i] as number[], p99[i] as number[]];
    const errors = (runs[i] as Throughput[]).reduce((n, r) => n + r.errors, 0);
    const [toFloor, p99ToFloor] =
      floor < 0
        ? ['–', '–']
        : [roundRatios(mine, rps[floor] as number[]), roundRatios(late, p99[floor] as number[])];
    console.log(
      `| ${t} | ${median(mine).toFixed(0)} | ${toFloor} | ${median(late).toFixed(2)} | ${p99ToFloor} | ${errors} |`,
    );
  });
  const [deno, node] = [TARGETS.indexOf('deno'), TARGETS.indexOf('cache_aware')];
  if (deno >= 0 && node >= 0) {
    const cell = roundRatios(rps[deno] as number[], rps[node] as number[]);
    console.log(`\nDeno ÷ Node, same code, cache_aware, interleaved: req/s ${cell}`);
  }
}

/** Time to first token with every target running at once, in interleaved streaming rounds. */
async function interleavedTtftTable(servers: Server[], engines: Server[]): Promise<void> {
  await configure(engines, { 'ttft-ms': 5, 'itl-ms': 2 });
  const options = { rounds: TTFT_ROUNDS, seconds: TTFT_ROUND_SECONDS };
  const c1 = await interleavedTtft(servers, shortChat(true), { ...options, c: 1 });
  const c32 = await interleavedTtft(servers, shortChat(true), { ...options, c: 32 });
  const floor = TARGETS.indexOf('floor');
  console.log(
    `\nTime to the first body chunk, all targets running at once, ${TTFT_ROUNDS} interleaved rounds of ` +
      `${TTFT_ROUND_SECONDS} s per target and concurrency (p50 ms: median of the rounds' p50s; added: ` +
      "median of the per-round differences to the floor's, min–max):\n",
  );
  console.log('| target | TTFT c1 p50 ms | added vs floor | TTFT c32 p50 ms | added vs floor |');
  console.log('|---|---:|---:|---:|---:|');
  TARGETS.forEach((t, i) => {
    const cells = [c1, c32].flatMap((p) => {
      const mine = p[i] as number[];
      return [median(mine).toFixed(2), floor < 0 ? '–' : roundDifferences(mine, p[floor] as number[])];
    });
    console.log(`| ${t} | ${cells.join(' | ')} |`);
  });
}

async function main(): Promise<void> {
  if (process.env.SKIP_BUILD !== '1') execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')]);
  // This process (the streaming client) and whatever it starts without a CPU of its own (wrk) run on CPU 1.
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const load = loadavg().map((l) => l.toFixed(2));
  console.log(
    `load average ${load.join(' ')}; ${PIN ? 'proxy on CPU 0, engines and load on CPU 1' : 'no pinning'}; ` +
      `load: ${WRK ? 'wrk -t1' : 'built-in closed-loop client'}; targets ${TARGETS.join(', ')}; repeats ${REPEATS}`,
  );
  const engines = [await startEngine(ROOT, 'engine-a', 1), await startEngine(ROOT, 'engine-b', 1)];
  const runs: Run[][] = [];
  try {
    // Engines fresh from start run their first thousands of requests slower (JIT): warm them up.
    for (const e of engines) {
      await configure([e], { 'ttft-ms': 0, 'itl-ms': 0 });
      await closedLoop(e.url, shortChat(false), 32, 0, 2);
      await closedLoop(e.url, shortChat(true), 32, 0, 1);
    }
    for (let r = 0; r < REPEATS; r++) {
      const round: Run[] = [];
      for (const target of TARGETS) {
        const run = await measure(target, engines);
        console.log(
          `[${r + 1}/${REPEATS}] ${target}: ${Math.round(run.nonstream.rps)} req/s, ` +
            `p99 ${run.nonstream.p99Ms.toFixed(2)} ms, ${run.cpuUsPerRequest.toFixed(0)} µs CPU/request, ` +
            `TTFT c1 ${run.ttftC1.toFixed(2)} ms, c32 ${run.ttftC32.toFixed(2)} ms, errors ${run.errors}`,
        );
        round.push(run);
      }
      runs.push(round);
    }
    printTable(runs, TARGETS);
    await interleavedTable(engines);
  } finally {
    await Promise.all(engines.map((e) => e.stop()));
  }
  console.log(
    `\nload average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}

await main();
