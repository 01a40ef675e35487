/**
 * Instructions per request, counted by valgrind's callgrind: what one change costs the router,
 * free of a shared machine's noise. CPU time on these VMs swings by ±30 % from one burst to the
 * next; an instruction count is the same, run after run, to 1-2.5 %, whatever else the machine
 * is doing. It is not a time (cache misses and stalls are not in it), so it tells whether a change
 * removed work, not how long the work took.
 *
 *   npm run bench:instructions -- <git revision>   # that revision (built in a temporary worktree)
 *                                                  # against the working tree's dist/ (build first)
 *   SHORT=500 LONG=3000 REPEATS=2 C=8 POLICY=cache_aware STREAM=1 npm run bench:instructions -- HEAD~1
 *   FLOOR=1 npm run bench:instructions -- HEAD~1   # the minimal undici proxy (bench/floor-proxy.ts) too
 *   SIZE=8192 npm run bench:instructions -- HEAD~1  # chats of about 8 KB, 8 system prompts,
 *                                                   # every user turn new (as bench:ab sends)
 *   POLICY_B=round_robin npm run bench:instructions # no revision: the working tree's dist/
 *                                                   # with POLICY, then with POLICY_B
 *   CACHE_SIM=1 npm run bench:instructions -- HEAD~1  # callgrind's cache simulation: first- and
 *                                                     # last-level data misses per request (last
 *                                                     # level 1048576,16,64: a core's own cache,
 *                                                     # not a shared L3; LL_CACHE to change it)
 *   NODE_FLAGS='--no-concurrent-recompilation' ...    # node flags for every run
 *   KEEP_LOGS=1 ...                                   # keep the callgrind files
 *
 * Each run's count is also split by kind of code (callgrind-split.ts): in the counted requests V8
 * is still optimizing (over half of the instructions between the 500th and the 3,000th request)
 * and much of the rest still runs in its lower tiers, so the counts describe a process early in
 * its life; the column without the compiler comes closer to a request's own work.
 *
 * Each router runs under callgrind (all its threads: the JIT compilers and the collector's helpers
 * count too) in front of two simulated engines, takes SHORT requests from C closed-loop clients
 * in one run and LONG in another, and is stopped; a run's total is its instructions from start to
 * exit. What is left after subtracting the short run from the long one is (LONG − SHORT) requests:
 * startup and shutdown cancel out, warm-up only in part (above). Runs alternate between the two
 * builds; each figure is the median of REPEATS. Under callgrind a request takes about 15 ms: a run
 * of the defaults takes about 8 minutes (twice that with CACHE_SIM=1). Simulated misses are not a
 * time either; they varied by 2-3 % between two runs of one build (CPU time here: ±30 %), so they
 * show whether a change made a request touch uncached memory much less often, not a little.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { instructionsByKind, KINDS, type Kind } from './callgrind-split.ts';
import { median } from './overhead-interleave.ts';
import { closedLoop } from './overhead-load.ts';
import { answeringAt, spawnServer, startEngine, WORK_DIR } from './overhead-procs.ts';
import { chatBodies } from './prompt-words.ts';
import { buildRevision, ROOT } from './revision.ts';
import { flagsOf, hasCommand } from './support.ts';

const SHORT = Number(process.env.SHORT ?? 500);
const LONG = Number(process.env.LONG ?? 3000);
const REPEATS = Number(process.env.REPEATS ?? 2);
const C = Number(process.env.C ?? 8);
const POLICY = process.env.POLICY ?? 'cache_aware';
const POLICY_B = process.env.POLICY_B;
const STREAM = process.env.STREAM === '1';
const SIZE = Number(process.env.SIZE ?? 0);
const CACHE_SIM = process.env.CACHE_SIM === '1';
const LL_CACHE = process.env.LL_CACHE ?? '1048576,16,64';
/** Node's own flags for every run (NODE_FLAGS='--no-concurrent-recompilation'). */
const NODE_FLAGS = flagsOf(process.env.NODE_FLAGS);
const base = process.argv[2];
if ((!base && !POLICY_B) || !(LONG > SHORT)) {
  console.error('usage: [SHORT=500 LONG=3000] npm run bench:instructions -- <git revision>');
  console.error('       POLICY_B=round_robin npm run bench:instructions   (two policies, one build)');
  process.exit(2);
}
if (!hasCommand('valgrind')) {
  console.error('bench:instructions needs valgrind (apt-get install valgrind)');
  process.exit(2);
}

const shortBody = JSON.stringify({
  model: 'sim-model',
  stream: STREAM,
  max_tokens: 16,
  messages: [
    { role: 'system', content: 'You are a helpful assistant for the benchmark. Answer briefly.' },
    { role: 'user', content: 'Say hello to the benchmark in a few words.' },
  ],
});
/** Every run gets the same requests in the same order (a fresh generator of the same seed). */
const bodyOfRun = () =>
  SIZE > 0 && !STREAM ? chatBodies(SIZE, { systemPrompts: 8, turns: 0, seed: 7 }) : shortBody;

/**
 * What callgrind counted in one run: instructions (all, and by kind of code: callgrind-split.ts),
 * and with CACHE_SIM=1 the data misses.
 */
type Counts = Record<Kind, number> & { ir: number; d1: number; ll: number };

let runs = 0;
/** The floor's stand-in for a build's root. */
const FLOOR = 'floor';
const listening = (output: string) => / listening on (http:\/\/[^\s"]+)/.exec(output)?.[1];

function countsOf(file: string, name: string): Counts {
  const text = readFileSync(file, 'utf8');
  const events = /^events: (.+)$/m.exec(text)?.[1]?.trim().split(/\s+/);
  const totals = /^totals: (.+)$/m.exec(text)?.[1]?.trim().split(/\s+/).map(Number);
  if (!events || !totals) throw new Error(`${name}: no totals in ${file}`);
  const of = (event: string) => totals[events.indexOf(event)] ?? 0;
  const misses = { d1: of('D1mr') + of('D1mw'), ll: of('DLmr') + of('DLmw') };
  return { ir: of('Ir'), ...misses, ...instructionsByKind(file) };
}

/** One router from `root` under callgrind, sent `count` requests, then stopped: what was counted. */
async function countRun(root: string, policy: string, engines: string[], count: number): Promise<Counts> {
  const name = `run-${++runs}`;
  const out = join(WORK_DIR, `${name}.callgrind`);
  const { url, ready } = answeringAt('/readiness', true);
  const port = new URL(url).port;
  const sim = CACHE_SIM ? ['--cache-sim=yes', `--LL=${LL_CACHE}`] : [];
  const tool = ['--tool=callgrind', ...sim, `--callgrind-out-file=${out}`, process.execPath, ...NODE_FLAGS];
  const router = [
    join(root, 'dist/node/main.js'),
    ...['--host', '127.0.0.1', '--port', port, '--prometheus-port', '0', '--policy', policy],
    ...['--worker-urls', ...engines],
  ];
  const floor = ['--import', 'tsx', join(ROOT, 'bench/floor-proxy.ts'), port, engines.join(',')];
  const args = [...tool, ...(root === FLOOR ? floor : router)];
  const server = await spawnServer(name, 'valgrind', args, root === FLOOR ? listening : ready, 0, 300_000);
  const load = await closedLoop(server.url, bodyOfRun(), C, count);
  await server.stop();
  if (load.errors > 0) throw new Error(`${name}: ${load.errors} of ${count} requests failed`);
  return countsOf(out, name);
}

interface Target {
  name: string;
  root: string;
  policy: string;
  short: Counts[];
  long: Counts[];
}

const built = base ? buildRevision(base) : undefined;
try {
  const engines = [await startEngine(ROOT, 'e1', 1), await startEngine(ROOT, 'e2', 1)];
  const urls = engines.map((e) => e.url);
  const target = (name: string, root: string, policy: string): Target => ({
    name,
    root,
    policy,
    short: [],
    long: [],
  });
  const targets =
    built === undefined
      ? [target(POLICY, ROOT, POLICY), target(POLICY_B as string, ROOT, POLICY_B as string)]
      : [target(`base ${base}`, built.dir, POLICY), target('working tree', ROOT, POLICY)];
  if (process.env.FLOOR === '1') targets.push(target('floor', FLOOR, ''));
  const what = SIZE > 0 && !STREAM ? `${SIZE}-character chats` : 'short chats';
  const policies = built === undefined ? `${POLICY} and ${POLICY_B}` : POLICY;
  console.log(
    `callgrind${CACHE_SIM ? ` with cache simulation (LL ${LL_CACHE})` : ''}, ${STREAM ? 'streamed' : 'non-streaming'} ${what} at c${C}, ${policies}: ${SHORT} and ${LONG} requests per run, ${REPEATS} repeats`,
  );
  for (let r = 0; r < REPEATS; r++) {
    // Alternating which target goes first, so neither always runs on a fresher machine.
    for (const t of r % 2 === 0 ? targets : [...targets].reverse()) {
      t.short.push(await countRun(t.root, t.policy, urls, SHORT));
      t.long.push(await countRun(t.root, t.policy, urls, LONG));
      console.log(
        `[${r + 1}/${REPEATS}] ${t.name}: ${t.short.at(-1)?.ir} and ${t.long.at(-1)?.ir} instructions`,
      );
    }
  }
  const perRequest = (t: Target, k: keyof Counts) =>
    (median(t.long.map((c) => c[k])) - median(t.short.map((c) => c[k]))) / (LONG - SHORT);
  const first = targets[0] as Target;
  const count = (n: number) => Math.round(n).toLocaleString('en');
  const ratio = (t: Target, k: keyof Counts) => (perRequest(t, k) / perRequest(first, k)).toFixed(3);
  const cells = (t: Target, k: keyof Counts) => `${count(perRequest(t, k))} | ${ratio(t, k)}`;
  const simHead = CACHE_SIM ? ' D1 data misses | ÷ first | LL data misses | ÷ first |' : '';
  console.log(`\n| router | instructions per request | ÷ first | per-run spread (long runs) |${simHead}`);
  console.log(`|---|---:|---:|---:|${CACHE_SIM ? '---:|---:|---:|---:|' : ''}`);
  for (const t of targets) {
    const long = t.long.map((c) => c.ir);
    const spread = (Math.max(...long) - Math.min(...long)) / (LONG - SHORT);
    const sim = CACHE_SIM ? ` ${cells(t, 'd1')} | ${cells(t, 'll')} |` : '';
    console.log(`| ${t.name} | ${cells(t, 'ir')} | ±${count(spread / 2)} |${sim}`);
  }
  // V8's optimizing compiler is still at work in the counted requests (see the header).
  const withoutCompiler = (t: Target) => perRequest(t, 'ir') - perRequest(t, 'compiler');
  console.log('\nBy kind of code (bench/callgrind-split.ts), instructions per request (÷ first):\n');
  console.log(`| router | ${KINDS.join(' | ')} | all but the compiler |`);
  console.log(`|---|${KINDS.map(() => '---:|').join('')}---:|`);
  for (const t of targets) {
    const kinds = KINDS.map((k) => `${count(perRequest(t, k))} (${ratio(t, k)})`);
    const rest = withoutCompiler(t);
    const restRatio = (rest / withoutCompiler(first)).toFixed(3);
    console.log(`| ${t.name} | ${kinds.join(' | ')} | ${count(rest)} (${restRatio}) |`);
  }
  for (const e of engines) await e.stop();
} finally {
  built?.remove();
}
process.exit(0);
