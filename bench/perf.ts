/**
 * Where a proxy's CPU goes, sampled by Linux `perf` (perf-profile.ts): two proxies side by side,
 * the same load, per request, by kind of code (the router's JavaScript, undici, Node, V8's builtins,
 * its collector, the kernel) and by symbol.
 *
 *   npm run bench:perf                                    # the floor against the router (cache_aware)
 *   TARGETS=cache_aware,round_robin SIZE=8192 npm run bench:perf   # what cache_aware costs at 8 KB
 *   STREAM=1 npm run bench:perf                           # streamed answers (16 chunks each)
 *   STREAM=1 TTFT_MS=5 ITL_MS=2 npm run bench:perf        # ... each token its own write, as engines send them
 *   N=20000 C=32 TOP=40 npm run bench:perf
 *   CALLS=1 npm run bench:perf                            # call graphs too: the router's functions
 *                                                         # with everything they called
 *
 *   TARGETS=deno,deno_floor npm run bench:perf            # the router on Deno against Deno's floor
 *
 * TARGETS names two proxies: `floor` (bench/floor-proxy.ts), `deno_floor` (bench/deno/floor-proxy.ts),
 * `deno` (the router on Deno, default policy) or a policy of the router on Node. Both run on
 * CPU 0, the two zero-latency simulated engines and the load on CPU 1; each is warmed up, then
 * recorded alone while it serves N requests from C closed-loop clients. SIZE > 0 sends chats of about
 * that size (8 system prompts, every user turn new, as bench:policy-http does); otherwise the short
 * chat of `npm run bench`. The figures are for finding work, not for ratios: those come from
 * interleaved runs (`npm run bench`, bench:ab, bench:policy-http). Needs `perf` (linux-perf) and
 * permission to sample (root, or kernel.perf_event_paranoid ≤ 1 for kernel symbols).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type Body, closedLoop } from './overhead-load.ts';
import {
  configureEngines,
  PIN,
  type Server,
  startDenoFloor,
  startDenoRouter,
  startEngine,
  startFloor,
  startRouter,
  WORK_DIR,
} from './overhead-procs.ts';
import {
  hasPerf,
  inclusiveTable,
  PERF_DENO_FLAGS,
  PERF_NODE_FLAGS,
  perfRecord,
  perfTables,
  removePerfMap,
} from './perf-profile.ts';
import { chatBodies } from './prompt-words.ts';
import { ROOT } from './revision.ts';
import { shortChat } from './support.ts';

const TARGETS = (process.env.TARGETS ?? 'cache_aware,floor').split(',') as [string, string];
const N = Number(process.env.N ?? 20_000);
const C = Number(process.env.C ?? 32);
const SIZE = Number(process.env.SIZE ?? 0);
const STREAM = process.env.STREAM === '1';
const TOP = Number(process.env.TOP ?? 30);
/** The router's own functions: its Node bundle, or its sources as Deno runs them. */
const OWN = /\/main\.js:|\/src\/(core|adapters)\//;
const CALLS = process.env.CALLS === '1';
/** Engine latencies (ms): with ITL_MS > 0 every token of a stream is its own write, as from a real engine. */
const TTFT_MS = Number(process.env.TTFT_MS ?? 0);
const ITL_MS = Number(process.env.ITL_MS ?? 0);

if (!hasPerf()) {
  console.error('bench:perf needs perf (apt-get install linux-perf)');
  process.exit(2);
}
if (TARGETS.length !== 2) {
  console.error('TARGETS names two proxies: floor or a policy (TARGETS=cache_aware,floor)');
  process.exit(2);
}

/** The load: chats of about SIZE characters (as streams with STREAM=1), or the short chat. */
const chats = SIZE > 0 ? chatBodies(SIZE, { systemPrompts: 8, turns: 0, seed: 7 }) : undefined;
const load: Body =
  chats === undefined ? shortChat(STREAM) : STREAM ? () => `{"stream":true,${chats().slice(1)}` : chats;

function start(target: string, urls: string[], i: number): Promise<Server> {
  if (target === 'deno') return startDenoRouter(ROOT, urls, 0, PERF_DENO_FLAGS);
  if (target === 'deno_floor') return startDenoFloor(ROOT, urls, 0, PERF_DENO_FLAGS);
  if (target === 'floor') return startFloor(ROOT, urls, 0, PERF_NODE_FLAGS, `floor (${i + 1})`);
  return startRouter(ROOT, `${target} (${i + 1})`, urls, ['--policy', target], 0, PERF_NODE_FLAGS);
}

if (process.env.SKIP_BUILD !== '1') execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')]);
if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const engines = [await startEngine(ROOT, 'engine-a', 1), await startEngine(ROOT, 'engine-b', 1)];
const servers: Server[] = [];
try {
  const urls = engines.map((e) => e.url);
  if (TTFT_MS > 0 || ITL_MS > 0) await configureEngines(engines, { 'ttft-ms': TTFT_MS, 'itl-ms': ITL_MS });
  for (const [i, t] of TARGETS.entries()) servers.push(await start(t, urls, i));
  for (const s of servers) await closedLoop(s.url, load, C, 3000);
  const files: string[] = [];
  const served: number[] = [];
  const lines: string[] = [];
  for (const s of servers) {
    const file = join(WORK_DIR, `${s.pid}.perf`);
    const recording = await perfRecord(s.pid, file, CALLS);
    const run = await closedLoop(s.url, load, C, N);
    await recording.stop();
    files.push(file);
    served.push(run.requests);
    lines.push(`${s.name}: ${run.rps.toFixed(0)} req/s while recorded, ${run.errors} errors`);
  }
  console.log(
    `perf, ${N} ${STREAM ? 'streamed' : 'non-streaming'} requests at c${C}${SIZE > 0 ? `, chats of about ${SIZE} characters` : ''}; ` +
      `${TTFT_MS > 0 || ITL_MS > 0 ? `engines ${TTFT_MS} ms to the first token, ${ITL_MS} ms per token; ` : ''}` +
      `${PIN ? 'proxies on CPU 0' : 'no pinning'}\n${lines.join('\n')}\n`,
  );
  const names = servers.map((s) => s.name) as [string, string];
  console.log(perfTables(files as [string, string], names, served as [number, number], TOP));
  // The router's own functions: in its bundle on Node, in its sources on Deno (OWN).
  servers.forEach((s, i) => {
    if (CALLS && !TARGETS[i]?.endsWith('floor'))
      console.log(`\n${inclusiveTable(files[i] as string, s.name, served[i] as number, OWN, TOP)}`);
  });
} finally {
  for (const s of servers) {
    await s.stop();
    removePerfMap(s.pid);
  }
  for (const e of engines) await e.stop();
}
process.exit(0);
