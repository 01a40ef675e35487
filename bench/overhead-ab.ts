/**
 * Two builds of the router side by side, and the floor: what one change bought, measured on a noisy
 * machine. All three proxies run at once on CPU 0 (engines and load on CPU 1); short closed-loop
 * bursts go to each in turn, alternating the order, and each proxy's CPU time (its threads' run
 * time from /proc) is summed over its bursts, so drift in the machine's speed falls on all three alike.
 *
 *   npm run bench:ab -- <git revision>   # that revision (built in a temporary worktree) against
 *                                        # the working tree's dist/ (npm run build first)
 *   BURSTS=20 N=1500 C=32 POLICY=cache_aware npm run bench:ab -- HEAD~3
 *   STREAM=1 npm run bench:ab -- HEAD~3  # streamed answers (SSE, 16 tokens from zero-latency engines)
 *   STREAM=1 TTFT_MS=5 ITL_MS=2 npm run bench:ab -- HEAD~3  # ... each token its own write, as engines send them
 *   TTFT_ROUNDS=12 npm run bench:ab -- HEAD~3  # then the time to the first chunk of streams (engines
 *                                        # 5 ms to the first token, 2 ms per token) at c1 and c32 in
 *                                        # interleaved 1 s rounds (TTFT_ROUND_SECONDS): each build's
 *                                        # p50 against the floor's and the base's of the same round
 *   RUNTIME=deno npm run bench:ab -- HEAD~3  # the two trees' routers on Deno (the floor stays Node's)
 *   SIZE=8192 npm run bench:ab -- HEAD~3  # chats of about 8 KB, 8 system prompts, every user turn new
 *                                        # (cache_aware grows its tree on every request); TURNS=k cycles k
 *
 * It also prints each proxy's young-generation collections (V8's --trace-gc-nvp): the mean pause
 * and how much each one promoted to the old generation. A proxy that promotes much more than the
 * floor keeps finished requests reachable for a while, and pays for it in pauses (round 5 of
 * docs/benchmarks.md).
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { GC_FLAGS, logLength, scavenges } from './gc-trace.ts';
import { interleavedBursts, interleavedTtft, mean, median, roundDifferences } from './overhead-interleave.ts';
import { closedLoop } from './overhead-load.ts';
import {
  answeringAt,
  configureEngines,
  type Server,
  spawnServer,
  startEngine,
  startFloor,
} from './overhead-procs.ts';
import { chatBodies } from './prompt-words.ts';
import { intervalText } from './ratio-interval.ts';
import { buildRevision, ROOT } from './revision.ts';
import { shortChat } from './support.ts';

const BURSTS = Number(process.env.BURSTS ?? 20);
const N = Number(process.env.N ?? 1500);
const C = Number(process.env.C ?? 32);
const POLICY = process.env.POLICY ?? 'cache_aware';
const base = process.argv[2];
if (!base) {
  console.error('usage: npm run bench:ab -- <git revision>');
  process.exit(2);
}

const STREAM = process.env.STREAM === '1';
const RUNTIME = process.env.RUNTIME ?? 'node';
const SIZE = Number(process.env.SIZE ?? 0);
/** Engine latencies (ms): with ITL_MS > 0 every token of a stream is its own write. */
const TTFT_MS = Number(process.env.TTFT_MS ?? 0);
const ITL_MS = Number(process.env.ITL_MS ?? 0);
const TTFT_ROUNDS = Number(process.env.TTFT_ROUNDS ?? 0);
const TTFT_ROUND_SECONDS = Number(process.env.TTFT_ROUND_SECONDS ?? 1);
const fixed = shortChat(STREAM);
const body =
  SIZE > 0 && !STREAM
    ? chatBodies(SIZE, { systemPrompts: 8, turns: Number(process.env.TURNS ?? 0), seed: 7 })
    : fixed;

async function startBuild(name: string, root: string, engines: string[]): Promise<Server> {
  const { url, ready } = answeringAt('/liveness');
  const port = new URL(url).port;
  const flags = ['--host', '127.0.0.1', '--port', port, '--prometheus-port', '0', '--policy', POLICY];
  flags.push('--worker-urls', ...engines);
  if (RUNTIME === 'deno') {
    const deno = join(ROOT, 'node_modules/deno/deno');
    const permissions = ['--allow-net', '--allow-env', '--allow-read'];
    const main = join(root, 'src/adapters/deno/main.ts');
    process.env.DENO_DIR ??= join(ROOT, '.deno');
    const args = ['run', `--v8-flags=${GC_FLAGS.join(',')}`, ...permissions, main, ...flags];
    return spawnServer(name, deno, args, ready, 0);
  }
  return spawnServer(
    name,
    process.execPath,
    [...GC_FLAGS, join(root, 'dist/node/main.js'), ...flags],
    ready,
    0,
  );
}

/** Time to the first chunk at c1 and c32, in interleaved rounds: each build against the floor and the base. */
async function ttftTable(engines: Server[]): Promise<void> {
  await configureEngines(engines, { 'ttft-ms': 5, 'itl-ms': 2 });
  const options = { rounds: TTFT_ROUNDS, seconds: TTFT_ROUND_SECONDS };
  const stream = shortChat(true);
  const c1 = await interleavedTtft(servers, stream, { ...options, c: 1 });
  const c32 = await interleavedTtft(servers, stream, { ...options, c: 32 });
  console.log(
    `\nTime to the first chunk, ${TTFT_ROUNDS} interleaved rounds of ${TTFT_ROUND_SECONDS} s per proxy and ` +
      'concurrency (engines: 5 ms to the first token, 2 ms per token; p50 ms, median of the rounds; ' +
      'added: median (min–max) of the per-round differences):\n',
  );
  console.log(
    '| proxy | c1 p50 | c1 added vs floor | c1 vs base | c32 p50 | c32 added vs floor | c32 vs base |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  servers.forEach((s, i) => {
    const cells = [c1, c32].flatMap((runs) => {
      const mine = runs[i] as number[];
      const vsBase = i === 1 ? '–' : roundDifferences(mine, runs[1] as number[]);
      return [median(mine).toFixed(2), i === 0 ? '–' : roundDifferences(mine, runs[0] as number[]), vsBase];
    });
    console.log(`| ${s.name} | ${cells.join(' | ')} |`);
  });
}

const built = buildRevision(base);
const servers: Server[] = [];
try {
  const engines = [await startEngine(ROOT, 'e1', 1), await startEngine(ROOT, 'e2', 1)];
  const urls = engines.map((e) => e.url);
  if (TTFT_MS > 0 || ITL_MS > 0) await configureEngines(engines, { 'ttft-ms': TTFT_MS, 'itl-ms': ITL_MS });
  console.log(
    `load average ${loadavg()[0]?.toFixed(2)}; ${BURSTS} bursts of ${N} ${STREAM ? 'streamed' : 'non-streaming'} requests at c${C}${ITL_MS > 0 || TTFT_MS > 0 ? ` (engines: ${TTFT_MS} ms to the first token, ${ITL_MS} ms per token)` : ''}${typeof body === 'string' ? '' : ` (${SIZE}-character chats)`}, ${POLICY}, routers on ${RUNTIME}`,
  );
  servers.push(await startFloor(ROOT, urls, 0, GC_FLAGS));
  servers.push(await startBuild(`base ${base}`, built.dir, urls));
  servers.push(await startBuild('working tree', ROOT, urls));
  for (const s of servers) await closedLoop(s.url, body, C, 3000); // warm-up, before the GC count starts
  const logFrom = servers.map((s) => logLength(s.name));
  const { cpu, rps } = await interleavedBursts(servers, body, { bursts: BURSTS, n: N, c: C, warmup: 0 });
  const floorCpu = mean(cpu[0] as number[]);
  const baseCpu = mean(cpu[1] as number[]);
  console.log(
    '\n| proxy | CPU µs/request (mean) | ÷ floor | ÷ base | ÷ base, 90 % interval | req/s (median) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  servers.forEach((s, i) => {
    const c = mean(cpu[i] as number[]);
    const interval = i === 1 ? '–' : intervalText(cpu[i] as number[], cpu[1] as number[], 2);
    const cells = [c.toFixed(1), (c / floorCpu).toFixed(2), (c / baseCpu).toFixed(2), interval];
    console.log(`| ${s.name} | ${cells.join(' | ')} | ${median(rps[i] as number[]).toFixed(0)} |`);
  });
  console.log(
    '\n| proxy | young collections per 10k requests | mean pause ms | promoted per collection KB |',
  );
  console.log('|---|---:|---:|---:|');
  servers.forEach((s, i) => {
    const g = scavenges(s.name, logFrom[i] as number);
    const per10k = (g.count * 10_000) / (BURSTS * N);
    // No trace lines (a runtime that printed none): no figures.
    const cells =
      g.count === 0 ? ['–', '–', '–'] : [per10k.toFixed(1), g.pauseMs.toFixed(2), g.promotedKB.toFixed(0)];
    console.log(`| ${s.name} | ${cells.join(' | ')} |`);
  });
  if (TTFT_ROUNDS > 0) await ttftTable(engines);
  console.log(`\nload average at the end ${loadavg()[0]?.toFixed(2)}`);
  for (const e of engines) await e.stop();
} finally {
  for (const s of servers) await s.stop();
  built.remove();
}
process.exit(0);
