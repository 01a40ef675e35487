/**
 * What `cache_aware` costs over `round_robin` end to end, over real HTTP, as prompts grow:
 *   npm run bench:policy-http     # SIZES=512,8192,65536 BURSTS=10 N=1000 C=32 SYSTEM_PROMPTS=8
 *   POLICIES=cache_aware,cache_aware npm run bench:policy-http   # the same policy twice: the harness's own bias
 *   POLICIES=cache_aware,cache_aware FLAGS_A='--max-tree-bytes 1048576' npm run bench:policy-http
 *
 * The floor (bench/floor-proxy.ts) and two Node routers, one with `cache_aware` (the default) and
 * one with `round_robin`, run at once on CPU 0 in front of two zero-latency simulated engines
 * (engines and load on CPU 1). Per prompt size, closed-loop bursts of N requests at concurrency C go
 * to each proxy in turn (overhead-interleave.ts). Every request is a new chat body: one of
 * SYSTEM_PROMPTS system prompts of about the size, then a user turn no other request has, so
 * `cache_aware` walks and grows its tree on every request, extracts the text of a prompt of that
 * size, and spreads the system prompts over both engines as it would in production. Reported: CPU
 * per request (utime + stime from /proc) per proxy, `cache_aware` ÷ `round_robin` of the means and
 * per burst, and requests/s (median of the bursts). At saturation the router's throughput is the
 * inverse of its CPU per request, so the CPU ratio is the throughput cost.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { interleavedBursts, mean, median } from './overhead-interleave.ts';
import {
  configureEngines,
  PIN,
  type Server,
  startEngine,
  startFloor,
  startRouter,
} from './overhead-procs.ts';
import { promptWords } from './prompt-words.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SIZES = (process.env.SIZES ?? '512,8192,65536').split(',').map(Number);
const BURSTS = Number(process.env.BURSTS ?? 10);
const N = Number(process.env.N ?? 1000);
const C = Number(process.env.C ?? 32);
const SYSTEM_PROMPTS = Number(process.env.SYSTEM_PROMPTS ?? 8);
/** The two routers' policies: the first is the one measured against the second. */
const [A, B] = (process.env.POLICIES ?? 'cache_aware,round_robin').split(',') as [string, string];
/** More flags for each router (FLAGS_A='--max-tree-bytes 1048576'), to measure what a setting costs. */
const flagsOf = (v: string | undefined) => (v ?? '').split(' ').filter((f) => f !== '');

const { rand, words } = promptWords(7);

/** Chat bodies of about `size` characters: a system prompt of the size's set, then a new turn. */
function bodiesOf(size: number): () => string {
  const systems = Array.from({ length: SYSTEM_PROMPTS }, (_, i) => `${i} ${words(Math.max(64, size - 96))}`);
  let turn = 0;
  return () =>
    JSON.stringify({
      model: 'sim-model',
      max_tokens: 16,
      messages: [
        { role: 'system', content: systems[Math.floor(rand() * systems.length)] },
        { role: 'user', content: `question ${turn++}: ${words(40)}` },
      ],
    });
}

const ratioCell = (a: number[], b: number[]) => {
  const per = a.map((v, i) => v / (b[i] as number));
  return `${(mean(a) / mean(b)).toFixed(3)} (${Math.min(...per).toFixed(2)}–${Math.max(...per).toFixed(2)})`;
};

if (process.env.SKIP_BUILD !== '1') execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')]);
if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const servers: Server[] = [];
const engines = [await startEngine(ROOT, 'engine-a', 1), await startEngine(ROOT, 'engine-b', 1)];
try {
  const urls = engines.map((e) => e.url);
  await configureEngines(engines, { 'ttft-ms': 0, 'itl-ms': 0 });
  servers.push(await startFloor(ROOT, urls, 0));
  servers.push(
    await startRouter(ROOT, `${A} (1)`, urls, ['--policy', A, ...flagsOf(process.env.FLAGS_A)], 0),
  );
  servers.push(
    await startRouter(ROOT, `${B} (2)`, urls, ['--policy', B, ...flagsOf(process.env.FLAGS_B)], 0),
  );
  console.log(
    `load average ${loadavg()[0]?.toFixed(2)}; ${BURSTS} interleaved bursts of ${N} requests at c${C} per size; ` +
      `${SYSTEM_PROMPTS} system prompts, every user turn new; ${PIN ? 'proxies on CPU 0' : 'no pinning'}\n`,
  );
  console.log(
    `| prompt | floor CPU µs | ${A} CPU µs | ${B} CPU µs | CPU ${A} ÷ ${B} (per-burst range) | req/s ${A} / ${B} | req/s ratio |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const size of SIZES) {
    const { cpu, rps } = await interleavedBursts(servers, bodiesOf(size), {
      bursts: BURSTS,
      n: N,
      c: C,
      warmup: 1000,
    });
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
  }
  console.log(`\nload average at the end ${loadavg()[0]?.toFixed(2)}`);
} finally {
  for (const s of servers) await s.stop();
  for (const e of engines) await e.stop();
}
process.exit(0);
