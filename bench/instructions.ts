/**
 * Instructions per request, counted by valgrind's callgrind: what one change costs the router,
 * free of a shared machine's noise. CPU time on these VMs swings by ±30 % from one burst to the
 * next; an instruction count is the same, run after run, to about 1 %, whatever else the machine
 * is doing. It is not a time (cache misses and stalls are not in it), so it tells whether a change
 * removed work, not how long the work took.
 *
 *   npm run bench:instructions -- <git revision>   # that revision (built in a temporary worktree)
 *                                                  # against the working tree's dist/ (build first)
 *   SHORT=500 LONG=3000 REPEATS=2 C=8 POLICY=cache_aware STREAM=1 npm run bench:instructions -- HEAD~1
 *   FLOOR=1 npm run bench:instructions -- HEAD~1   # the minimal undici proxy (bench/floor-proxy.ts) too
 *
 * Each router runs under callgrind (all its threads: the JIT compilers and the collector's helpers
 * count too) in front of two simulated engines, takes SHORT requests from C closed-loop clients
 * in one run and LONG in another, and is stopped; a run's total is its instructions from start to
 * exit. What is left after subtracting the short run from the long one is (LONG − SHORT) requests
 * at steady state: startup, warm-up and shutdown cancel out. Runs alternate between the two builds;
 * each figure is the median of REPEATS. Under callgrind a request takes about 15 ms: a run of the
 * defaults takes about 8 minutes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from './overhead-interleave.ts';
import { closedLoop } from './overhead-load.ts';
import { answeringAt, spawnServer, startEngine, WORK_DIR } from './overhead-procs.ts';
import { buildRevision, ROOT } from './revision.ts';
import { hasCommand } from './support.ts';

const SHORT = Number(process.env.SHORT ?? 500);
const LONG = Number(process.env.LONG ?? 3000);
const REPEATS = Number(process.env.REPEATS ?? 2);
const C = Number(process.env.C ?? 8);
const POLICY = process.env.POLICY ?? 'cache_aware';
const STREAM = process.env.STREAM === '1';
const base = process.argv[2];
if (!base || !(LONG > SHORT)) {
  console.error('usage: [SHORT=500 LONG=3000] npm run bench:instructions -- <git revision>');
  process.exit(2);
}
if (!hasCommand('valgrind')) {
  console.error('bench:instructions needs valgrind (apt-get install valgrind)');
  process.exit(2);
}

const body = JSON.stringify({
  model: 'sim-model',
  stream: STREAM,
  max_tokens: 16,
  messages: [
    { role: 'system', content: 'You are a helpful assistant for the benchmark. Answer briefly.' },
    { role: 'user', content: 'Say hello to the benchmark in a few words.' },
  ],
});

let runs = 0;
/** The floor's stand-in for a build's root. */
const FLOOR = 'floor';
const listening = (output: string) => / listening on (http:\/\/[^\s"]+)/.exec(output)?.[1];

/** One router from `root` under callgrind, sent `count` requests, then stopped: its instruction total. */
async function countRun(root: string, engines: string[], count: number): Promise<number> {
  const name = `run-${++runs}`;
  const out = join(WORK_DIR, `${name}.callgrind`);
  const { url, ready } = answeringAt('/readiness', true);
  const port = new URL(url).port;
  const tool = ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath];
  const router = [
    join(root, 'dist/node/main.js'),
    ...['--host', '127.0.0.1', '--port', port, '--prometheus-port', '0', '--policy', POLICY],
    ...['--worker-urls', ...engines],
  ];
  const floor = ['--import', 'tsx', join(ROOT, 'bench/floor-proxy.ts'), port, engines.join(',')];
  const args = [...tool, ...(root === FLOOR ? floor : router)];
  const server = await spawnServer(name, 'valgrind', args, root === FLOOR ? listening : ready, 0, 300_000);
  const load = await closedLoop(server.url, body, C, count);
  await server.stop();
  if (load.errors > 0) throw new Error(`${name}: ${load.errors} of ${count} requests failed`);
  const totals = /^totals: (\d+)/m.exec(readFileSync(out, 'utf8'));
  if (!totals) throw new Error(`${name}: no totals in ${out}`);
  return Number(totals[1]);
}

const built = buildRevision(base);
try {
  const engines = [await startEngine(ROOT, 'e1', 1), await startEngine(ROOT, 'e2', 1)];
  const urls = engines.map((e) => e.url);
  const targets = [
    { name: `base ${base}`, root: built.dir, short: [] as number[], long: [] as number[] },
    { name: 'working tree', root: ROOT, short: [] as number[], long: [] as number[] },
  ];
  if (process.env.FLOOR === '1') targets.push({ name: 'floor', root: FLOOR, short: [], long: [] });
  console.log(
    `callgrind, ${STREAM ? 'streamed' : 'non-streaming'} chats at c${C}, ${POLICY}: ${SHORT} and ${LONG} requests per run, ${REPEATS} repeats`,
  );
  for (let r = 0; r < REPEATS; r++) {
    // Alternating which build goes first, so neither always runs on a fresher machine.
    for (const t of r % 2 === 0 ? targets : [...targets].reverse()) {
      t.short.push(await countRun(t.root, urls, SHORT));
      t.long.push(await countRun(t.root, urls, LONG));
      console.log(`[${r + 1}/${REPEATS}] ${t.name}: ${t.short.at(-1)} and ${t.long.at(-1)} instructions`);
    }
  }
  const perRequest = (t: (typeof targets)[number]) => (median(t.long) - median(t.short)) / (LONG - SHORT);
  const baseline = perRequest(targets[0] as (typeof targets)[number]);
  console.log('\n| router | instructions per request | ÷ base | per-run spread (long runs) |');
  console.log('|---|---:|---:|---:|');
  for (const t of targets) {
    const per = perRequest(t);
    const spread = (Math.max(...t.long) - Math.min(...t.long)) / (LONG - SHORT);
    console.log(
      `| ${t.name} | ${Math.round(per).toLocaleString('en')} | ${(per / baseline).toFixed(3)} | ±${Math.round(spread / 2).toLocaleString('en')} |`,
    );
  }
  for (const e of engines) await e.stop();
} finally {
  built.remove();
}
process.exit(0);
