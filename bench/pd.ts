/**
 * Prefill/decode disaggregation benchmark: the router (as its own process) in front of 4 simulated
 * engines, used either unified (--worker-urls, all four) or as 2 prefill + 2 decode workers.
 *   npm run bench:pd     # REPEATS=3 CONCURRENCIES=1,8,32 REQUESTS=30,160,320 (per concurrency)
 *                        # LATENCY_REQUESTS=200 CPU_REQUESTS=2000 CPU_CONCURRENCY=8 ROUTER=tsx|dist
 * Part 1: streamed chat requests (a shared system prompt, then a distinct part: the engines'
 * prefix caches hold the shared blocks, every request pays for its own) at each concurrency, for
 * unified, PD NIXL, PD Mooncake and PD Mooncake with --pd-concurrent-dispatch; client-side TTFT
 * (first body chunk) and throughput. The simulated decode with do_remote_prefill skips the prompt
 * cost; a Mooncake decode waits for its prefill's transfer (kvWaitMs). Repeats interleave the modes.
 * Part 2: zero-latency engines; router CPU time per request (utime + stime of the router process
 * from /proc/<pid>/stat, after the router has logged every request) and the latency the router
 * adds, PD NIXL next to regular mode, with the same 4 engines.
 */

import { loadavg } from 'node:os';
import { type RunningSimEngine, startSimEngine } from '../src/sim/node.ts';
import {
  aheadMs,
  describeAhead,
  type Level,
  MODES,
  type Mode,
  type Overhead,
  printPart1,
  printPart2,
  type Setup,
} from './pd-report.ts';
import {
  directPd,
  load,
  PIN,
  pin,
  processCpuMs,
  promptBodies,
  quantile,
  type RouterProcess,
  type Sample,
  startRouter,
  streamPost,
} from './pd-support.ts';

const list = (name: string, fallback: string) =>
  (process.env[name] ?? fallback).split(',').map((v) => Number(v.trim()));
const REPEATS = Number(process.env.REPEATS ?? 3);
const CONCURRENCIES = list('CONCURRENCIES', '1,8,32');
const REQUESTS = list('REQUESTS', '30,160,320');
const LATENCY_REQUESTS = Number(process.env.LATENCY_REQUESTS ?? 200);
const CPU_REQUESTS = Number(process.env.CPU_REQUESTS ?? 2000);
const CPU_CONCURRENCY = Number(process.env.CPU_CONCURRENCY ?? 8);
const WARMUP = 8;
const ROUTER_WARMUP = 200;
const SHARED_CHARS = 2048;
const OWN_CHARS = 2048;
const SIM = {
  ttftMs: 10,
  itlMs: 4,
  tokens: 8,
  blockMs: 2,
  blockChars: 64,
  cacheBlocks: 50_000,
  kvWaitMs: 10_000,
  logSize: 1000,
};
const ZERO = { ttftMs: 0, itlMs: 0, blockMs: 0, kvWaitMs: 0, logSize: 0 };
const requestsAt = (k: number) => REQUESTS[k] ?? REQUESTS.at(-1) ?? 40;

const busy = (cpuMs: number, wallMs: number) => `${Math.round((cpuMs / wallMs) * 100)} %`;
const ownCpuMs = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
};

function summarize(samples: Sample[], wallMs: number): Level {
  const ok = samples.filter((s) => s.status === 200 && s.ttftMs >= 0);
  const ttfts = ok.map((s) => s.ttftMs);
  return {
    p50: quantile(ttfts, 0.5),
    p99: quantile(ttfts, 0.99),
    rps: (ok.length / wallMs) * 1000,
    errors: samples.length - ok.length,
  };
}

function resetEngines(engines: RunningSimEngine[]): void {
  for (const e of engines) e.engine.reset();
}

/** Requests per engine (p0/p1/d0/d1) since the last reset. */
const perEngine = (engines: RunningSimEngine[]) => engines.map((e) => e.engine.stats().requests_total);

/** Each repeat runs every concurrency level for every mode (rotated), so modes are compared side by side. */
async function part1(
  engines: RunningSimEngine[],
  routers: Record<Mode, RouterProcess>,
  bodies: string[],
): Promise<{ results: Record<Mode, Level[][]>; legs: Record<Mode, string> }> {
  const results = Object.fromEntries(MODES.map((m) => [m, CONCURRENCIES.map((): Level[] => [])])) as Record<
    Mode,
    Level[][]
  >;
  const counts = {} as Record<Mode, string>;
  const ahead = Object.fromEntries(MODES.map((m) => [m, [] as number[]])) as Record<Mode, number[]>;
  for (const mode of MODES) {
    resetEngines(engines);
    await load(ROUTER_WARMUP, 16, (i) => routers[mode].post(bodies[i % bodies.length] as string));
  }
  for (let r = 0; r < REPEATS; r++) {
    let offset = WARMUP;
    for (let k = 0; k < CONCURRENCIES.length; k++) {
      const base = offset;
      offset += requestsAt(k);
      for (let j = 0; j < MODES.length; j++) {
        const mode = MODES[(j + r + k) % MODES.length] as Mode;
        const router = routers[mode];
        resetEngines(engines);
        await load(WARMUP, 4, (i) => router.post(bodies[i] as string));
        const cpu0 = [process.cpuUsage(), processCpuMs(router.pid)] as const;
        const { samples, wallMs } = await load(requestsAt(k), CONCURRENCIES[k] as number, (i) =>
          router.post(bodies[base + i] as string),
        );
        const level = summarize(samples, wallMs);
        (results[mode][k] as Level[]).push(level);
        counts[mode] = perEngine(engines).join(' / ');
        ahead[mode].push(...aheadMs(engines));
        process.stderr.write(
          `repeat ${r + 1} ${mode} c=${CONCURRENCIES[k]}: TTFT p50 ${level.p50.toFixed(1)} ms, ` +
            `p99 ${level.p99.toFixed(1)} ms, ${level.rps.toFixed(1)} req/s, errors ${level.errors}; CPU busy: ` +
            `router ${busy(processCpuMs(router.pid) - cpu0[1], wallMs)}, engines + client ${busy(ownCpuMs(cpu0[0]), wallMs)}\n`,
        );
      }
    }
  }
  const legs = Object.fromEntries(MODES.map((m) => [m, counts[m] + describeAhead(ahead[m])])) as Record<
    Mode,
    string
  >;
  return { results, legs };
}

async function part2(
  engines: RunningSimEngine[],
  routers: Record<Mode, RouterProcess>,
  bodies: string[],
): Promise<Record<string, Overhead>> {
  for (const e of engines) e.engine.configure(ZERO);
  resetEngines(engines);
  const [p0, , d0] = engines as [RunningSimEngine, RunningSimEngine, RunningSimEngine];
  const chat = (base: string) => `${base}/v1/chat/completions`;
  const body = (i: number) => bodies[i % bodies.length] as string;
  const targets: { name: string; router?: RouterProcess; send: (i: number) => Promise<Sample> }[] = [
    { name: 'direct: one engine, no router', send: (i) => streamPost(chat(p0.url), body(i)) },
    {
      name: 'direct: prefill then decode sent by the client',
      send: (i) => directPd(p0.url, d0.url, body(i)),
    },
    {
      name: 'regular router (4 engines)',
      router: routers.unified,
      send: (i) => routers.unified.post(body(i)),
    },
    {
      name: 'PD NIXL router (2 + 2)',
      router: routers['PD NIXL'],
      send: (i) => routers['PD NIXL'].post(body(i)),
    },
  ];
  const out: Record<string, Overhead> = {};
  for (const t of targets) {
    out[t.name] = { ttft: [], total: [], cpuMsPerReq: [], errors: 0 };
    await load(50, 4, t.send);
  }
  const routed = targets.filter((t) => t.router !== undefined);
  for (let r = 0; r < REPEATS; r++) {
    // Latency: one request at a time, to each target in turn (a burst of noise hits them all).
    const n = targets.length;
    const lat = await load(LATENCY_REQUESTS * n, 1, (i) => (targets[i % n] as (typeof targets)[0]).send(i));
    targets.forEach((t, j) => {
      const o = out[t.name] as Overhead;
      const mine = lat.samples.filter((_, i) => i % n === j);
      const ok = mine.filter((s) => s.status === 200);
      o.errors += mine.length - ok.length;
      o.ttft.push(
        quantile(
          ok.map((s) => s.ttftMs),
          0.5,
        ),
      );
      o.total.push(
        quantile(
          ok.map((s) => s.totalMs),
          0.5,
        ),
      );
    });
    // CPU: both routers loaded at once, their requests interleaved.
    for (const t of routed) await t.router?.settled();
    const before = routed.map((t) => processCpuMs((t.router as RouterProcess).pid));
    const run = await load(CPU_REQUESTS * routed.length, CPU_CONCURRENCY, (i) =>
      (routed[i % routed.length] as (typeof targets)[0]).send(i),
    );
    routed.forEach((t, j) => {
      const failed = run.samples.filter((s, i) => i % routed.length === j && s.status !== 200);
      (out[t.name] as Overhead).errors += failed.length;
    });
    for (const [j, t] of routed.entries()) {
      const router = t.router as RouterProcess;
      await router.settled();
      const o = out[t.name] as Overhead;
      o.cpuMsPerReq.push((processCpuMs(router.pid) - (before[j] as number)) / CPU_REQUESTS);
      process.stderr.write(
        `repeat ${r + 1} ${t.name}: CPU ${(o.cpuMsPerReq.at(-1) as number).toFixed(3)} ms/req, ` +
          `TTFT p50 at c=1 ${(o.ttft.at(-1) as number).toFixed(2)} ms\n`,
      );
    }
  }
  return out;
}

async function main(): Promise<void> {
  const started = performance.now();
  const load0 = loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
  if (PIN) pin(process.pid, 1);
  const ids = ['p0', 'p1', 'd0', 'd1'];
  const engines = await Promise.all(ids.map((id, i) => startSimEngine({ id, seed: 1 + i, ...SIM })));
  const routers: Partial<Record<Mode, RouterProcess>> = {};
  try {
    const [p0, p1, d0, d1] = engines as [
      RunningSimEngine,
      RunningSimEngine,
      RunningSimEngine,
      RunningSimEngine,
    ];
    const pd = ['--vllm-pd-disaggregation', '--decode', d0.url, '--decode', d1.url];
    const nixl = [...pd, '--prefill', p0.url, '--prefill', p1.url];
    const mooncake = [...pd, '--prefill', p0.url, String(p0.port), '--prefill', p1.url, String(p1.port)];
    mooncake.push('--kv-connector', 'mooncake');
    const args: Record<Mode, string[]> = {
      unified: ['--worker-urls', ...engines.map((e) => e.url)],
      'PD NIXL': nixl,
      'PD Mooncake': mooncake,
      'PD Mooncake concurrent': [...mooncake, '--pd-concurrent-dispatch'],
    };
    await Promise.all(
      MODES.map(async (m) => {
        routers[m] = await startRouter(m, args[m]);
      }),
    );
    const all = routers as Record<Mode, RouterProcess>;
    const total = WARMUP + CONCURRENCIES.reduce((sum, _, k) => sum + requestsAt(k), 0);
    const bodies = promptBodies(total, SHARED_CHARS, OWN_CHARS, SIM.tokens);
    const { results, legs } = await part1(engines, all, bodies);
    const overhead = await part2(engines, all, bodies);
    const setup: Setup = {
      sim: SIM,
      sharedChars: SHARED_CHARS,
      ownChars: OWN_CHARS,
      concurrencies: CONCURRENCIES,
      requestsAt,
      repeats: REPEATS,
      pinned: PIN,
      latencyRequests: LATENCY_REQUESTS,
      cpuRequests: CPU_REQUESTS,
      cpuConcurrency: CPU_CONCURRENCY,
    };
    printPart1(results, legs, setup);
    printPart2(overhead, setup);
    console.log(
      `\nload average at start ${load0}, at end ${loadavg()
        .map((v) => v.toFixed(2))
        .join(' ')}; ` +
        `Node ${process.version}, ${process.env.ROUTER === 'dist' ? 'dist/node/main.js' : 'router sources via tsx'}; ` +
        `run time ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await Promise.all(Object.values(routers).map((r) => r.stop()));
    await Promise.all(engines.map((e) => e.close()));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
