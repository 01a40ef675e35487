/**
 * What `cache_aware` costs over `round_robin` end to end, over real HTTP, as prompts grow:
 *   npm run bench:policy-http     # SIZES=512,8192,65536 BURSTS=10 N=1000 C=32 SYSTEM_PROMPTS=8 TURNS=0
 *   POLICIES=cache_aware,cache_aware npm run bench:policy-http   # the same policy twice: the harness's own bias
 *   POLICIES=cache_aware,cache_aware FLAGS_A='--max-tree-bytes 1048576' npm run bench:policy-http
 *   WARMUP=320000 SIZES=8192 npm run bench:policy-http   # the tree full first: every insert evicts
 *   NODE_FLAGS_A='--min-semi-space-size=16' npm run bench:policy-http   # a V8 setting for one router
 *   CPU_PROF=1 SIZES=8192 npm run bench:policy-http   # both routers under V8's CPU profiler: which
 *                                                     # functions make the difference (cpu-profile.ts)
 *
 * The floor (bench/floor-proxy.ts) and two Node routers, one with `cache_aware` (the default) and
 * one with `round_robin`, run at once on CPU 0 in front of two zero-latency simulated engines
 * (engines and load on CPU 1). Per prompt size, closed-loop bursts of N requests at concurrency C go
 * to each proxy in turn (overhead-interleave.ts). Every request is a new chat body: one of
 * SYSTEM_PROMPTS system prompts of about the size, then a user turn no other request has, so
 * `cache_aware` walks and grows its tree on every request, extracts the text of a prompt of that
 * size, and spreads the system prompts over both engines as it would in production (TURNS=k: the
 * turns cycle through k texts instead, so once warm the tree stops growing: what inserting costs is
 * the difference). Reported: CPU per request (each thread's run time from /proc) per proxy,
 * `cache_aware` ÷ `round_robin` of the means with its 90 % interval (a bootstrap over the rounds,
 * ratio-interval.ts) and the per-burst range, and requests/s (median of the bursts);
 * then what each proxy's garbage collector did (V8's trace: young collections, their pauses and
 * what they promoted, full collections). At saturation the router's throughput is the inverse of
 * its CPU per request, so the CPU ratio is the throughput cost.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { profileDiff, profileFlags } from './cpu-profile.ts';
import { fullCollections, GC_FLAGS, logLength, scavenges } from './gc-trace.ts';
import { interleavedBursts, mean, median } from './overhead-interleave.ts';
import { closedLoop } from './overhead-load.ts';
import {
  configureEngines,
  PIN,
  type Server,
  startEngine,
  startFloor,
  startRouter,
  WORK_DIR,
} from './overhead-procs.ts';
import { chatBodies } from './prompt-words.ts';
import { intervalText } from './ratio-interval.ts';
import { flagsOf } from './support.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SIZES = (process.env.SIZES ?? '512,8192,65536').split(',').map(Number);
const BURSTS = Number(process.env.BURSTS ?? 10);
const N = Number(process.env.N ?? 1000);
const C = Number(process.env.C ?? 32);
const SYSTEM_PROMPTS = Number(process.env.SYSTEM_PROMPTS ?? 8);
/** 0: every user turn is new. k: the turns cycle through k texts (chatBodies in prompt-words.ts). */
const TURNS = Number(process.env.TURNS ?? 0);
/** The two routers' policies: the first is the one measured against the second. */
const [A, B] = (process.env.POLICIES ?? 'cache_aware,round_robin').split(',') as [string, string];
/** More flags for each router (FLAGS_A='--max-tree-bytes 1048576'), to measure what a setting costs. */

/** Chat bodies of about `size` characters: a system prompt of the size's set, then a user turn. */
const bodiesOf = (size: number) => chatBodies(size, { systemPrompts: SYSTEM_PROMPTS, turns: TURNS, seed: 7 });

/** Requests to each proxy before the measured bursts (WARMUP=320000: the tree at its 64 MiB bound). */
const WARMUP = Number(process.env.WARMUP ?? 1000);
/** Where each router writes its CPU profile with CPU_PROF=1 (none without). */
const PROFILE_DIRS = [join(WORK_DIR, 'profile-a'), join(WORK_DIR, 'profile-b')] as const;
/** Node's own flags for each router: the GC trace, the profiler with CPU_PROF=1, NODE_FLAGS_A / _B. */
const nodeFlags = (i: 0 | 1) => [
  ...GC_FLAGS,
  ...(process.env.CPU_PROF === '1' ? profileFlags(PROFILE_DIRS[i]) : []),
  ...flagsOf(process.env[i === 0 ? 'NODE_FLAGS_A' : 'NODE_FLAGS_B']),
];

/** What the collector did in one proxy since `from` in its log, as a table row. */
function gcRow(size: string, s: Server, from: number): string {
  const requests = BURSTS * N;
  const young = scavenges(s.name, from);
  const full = fullCollections(s.name, from);
  const cells = [
    size,
    s.name,
    ((young.count * 10_000) / requests).toFixed(1),
    young.pauseMs.toFixed(2),
    young.promotedKB.toFixed(0),
    ((young.count * young.promotedKB) / requests).toFixed(2),
    String(full.count),
    (full.count * full.pauseMs).toFixed(1),
  ];
  return `| ${cells.join(' | ')} |`;
}

const ratioCell = (a: number[], b: number[]) => {
  const per = a.map((v, i) => v / (b[i] as number));
  const range = `${Math.min(...per).toFixed(2)}–${Math.max(...per).toFixed(2)}`;
  return `${(mean(a) / mean(b)).toFixed(3)} (${intervalText(a, b)}; ${range})`;
};

if (process.env.SKIP_BUILD !== '1') execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')]);
if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const servers: Server[] = [];
const engines = [await startEngine(ROOT, 'engine-a', 1), await startEngine(ROOT, 'engine-b', 1)];
try {
  const urls = engines.map((e) => e.url);
  await configureEngines(engines, { 'ttft-ms': 0, 'itl-ms': 0 });
  servers.push(await startFloor(ROOT, urls, 0, GC_FLAGS));
  const flagsA = ['--policy', A, ...flagsOf(process.env.FLAGS_A)];
  servers.push(await startRouter(ROOT, `${A} (1)`, urls, flagsA, 0, nodeFlags(0)));
  const flagsB = ['--policy', B, ...flagsOf(process.env.FLAGS_B)];
  servers.push(await startRouter(ROOT, `${B} (2)`, urls, flagsB, 0, nodeFlags(1)));
  console.log(
    `load average ${loadavg()[0]?.toFixed(2)}; ${BURSTS} interleaved bursts of ${N} requests at c${C} per size; ` +
      `${SYSTEM_PROMPTS} system prompts, ${TURNS > 0 ? `user turns cycling through ${TURNS}` : 'every user turn new'}; ${PIN ? 'proxies on CPU 0' : 'no pinning'}\n`,
  );
  console.log(
    `| prompt | floor CPU µs | ${A} CPU µs | ${B} CPU µs | CPU ${A} ÷ ${B} (90 % interval; per-burst range) | req/s ${A} / ${B} | req/s ratio |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const gcRows: string[] = [];
  const treeRows: string[] = [];
  for (const size of SIZES) {
    const bodies = bodiesOf(size);
    // The floor holds no state: a short warm-up is all it needs.
    for (const s of servers)
      await closedLoop(s.url, bodies, C, s === servers[0] ? Math.min(WARMUP, 5000) : WARMUP);
    const treeBefore = await Promise.all(servers.slice(1).map((s) => treeMiB(s.url)));
    const logFrom = servers.map((s) => logLength(s.name));
    const { cpu, rps } = await interleavedBursts(servers, bodies, { bursts: BURSTS, n: N, c: C, warmup: 0 });
    const [floor, ca, rr] = cpu as [number[], number[], number[]];
    const [caRps, rrRps] = [median(rps[1] as number[]), median(rps[2] as number[])];
    const cells = [
      `${(size / 1024).toFixed(1)} KB`,
      mean(floor).toFixed(1),
      mean(ca).toFixed(1),
      mean(rr).toFixed(1),
      ratioCell(ca, rr),
      `${caRps.toFixed(0)} / ${rrRps.toFixed(0)}`,
      (caRps / rrRps).toFixed(3),
    ];
    console.log(`| ${cells.join(' | ')} |`);
    const label = `${(size / 1024).toFixed(1)} KB`;
    const treeAfter = await Promise.all(servers.slice(1).map((s) => treeMiB(s.url)));
    treeRows.push(
      `${label}: prefix tree (MiB, estimate) after the warm-up / after the bursts: ` +
        servers
          .slice(1)
          .map((s, i) => `${s.name} ${treeBefore[i]?.toFixed(1)} / ${treeAfter[i]?.toFixed(1)}`)
          .join(', '),
    );
    servers.forEach((s, i) => {
      gcRows.push(gcRow(label, s, logFrom[i] as number));
    });
  }
  console.log(`\n${treeRows.join('\n')}`);
  console.log(
    `\nGarbage collection per proxy (V8's trace, the measured bursts: ${BURSTS * N} requests per size)\n`,
  );
  console.log(
    '| prompt | proxy | young collections per 10k requests | mean pause ms | promoted per collection KB | promoted per request KB | full collections | full pause ms (sum) |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const row of gcRows) console.log(row);
  console.log(`\nload average at the end ${loadavg()[0]?.toFixed(2)}`);
} finally {
  for (const s of servers) await s.stop();
  for (const e of engines) await e.stop();
}
/** A router's vllm_router_tree_bytes (summed over pools) from its /metrics, in MiB. */
async function treeMiB(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let bytes = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('vllm_router_tree_bytes{')) bytes += Number(line.slice(line.lastIndexOf(' ') + 1));
  return bytes / 2 ** 20;
}

if (process.env.CPU_PROF === '1') {
  // Written as each router exited: the whole run, warm-up included.
  const requests = SIZES.length * (BURSTS * N + WARMUP);
  console.log(
    `\nCPU profile: self time per request, the functions that differ most (${requests} requests)\n`,
  );
  console.log(profileDiff(PROFILE_DIRS[0], PROFILE_DIRS[1], [A, B], requests));
}
process.exit(0);
