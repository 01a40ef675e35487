/**
 * What `cache_aware` costs over `round_robin` in throughput, with both routers saturated:
 *   npm run bench:policy-wrk       # SIZE=8192 ROUNDS=10 ROUND_SECONDS=5 C=32 SYSTEM_PROMPTS=8
 *
 * Two Node routers, one per policy, run at once on CPU 0 in front of two engines that cost next to
 * nothing (bench/null-engine.ts: they read the body without parsing it). wrk (one thread, CPU 1)
 * builds every request in its own script: one of SYSTEM_PROMPTS system prompts of about SIZE
 * characters, then a user turn no other request has, so `cache_aware` walks its tree through the
 * stored system prompt and grows it (at its bound: evicts) on every request. wrk rounds of ROUND_SECONDS
 * go to each router in turn, the order reversed every other round. Per round and router: requests/s,
 * CPU per request (its threads' run time from /proc) and how busy it kept its core (CPU time ÷ wall
 * time: near 1 means the router, not the load, set the pace). bench:policy-http measures the same
 * decision with closed-loop bursts whose load side saturates first at 8 KB; here the ratio of
 * requests/s is the throughput cost itself.
 *
 *   BASE=/path/to/other/checkout npm run bench:policy-wrk   # before and after a change, in one run
 *
 * BASE (a checkout with its own `dist/node/main.js` built) adds that build's two routers: the four
 * take their rounds in turn (the order rotating), and the ratios are printed for each build, with
 * this build's `cache_aware` against the base's, so a change is not judged across the host's moods.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { mean, median, roundRatios, spread, treeCpuMs } from './overhead-interleave.ts';
import { type Throughput, wrkScripted } from './overhead-load.ts';
import { hasCommand, PIN, type Server, spawnServer, startRouter, WORK_DIR } from './overhead-procs.ts';
import { promptWords } from './prompt-words.ts';
import { intervalText } from './ratio-interval.ts';
import { ROOT } from './revision.ts';

const SIZE = Number(process.env.SIZE ?? 8192);
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const SECONDS = Number(process.env.ROUND_SECONDS ?? 5);
const C = Number(process.env.C ?? 32);
const SYSTEM_PROMPTS = Number(process.env.SYSTEM_PROMPTS ?? 8);
const POLICIES = ['cache_aware', 'round_robin'];
const BASE = process.env.BASE;
/** The routers measured: each policy from this build, then from BASE's. */
const TARGETS = [ROOT, ...(BASE ? [BASE] : [])].flatMap((root) =>
  POLICIES.map((policy) => ({ root, policy, name: root === ROOT ? policy : `${policy} (base)` })),
);

/** Lua that builds each request: a system prompt in turn, then "question <n>: <words>" (n never repeats). */
function requestScript(): string {
  const { words } = promptWords(7);
  const marker = '"@TURN@"';
  const heads = Array.from({ length: SYSTEM_PROMPTS }, (_, i) => {
    const system = `${i} ${words(Math.max(64, SIZE - 96))}`;
    const body = JSON.stringify({
      model: 'sim-model',
      max_tokens: 16,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: '@TURN@' },
      ],
    });
    return `${body.slice(0, body.indexOf(marker))}"question `;
  });
  const turns = Array.from({ length: 64 }, () => words(200));
  const list = (items: string[]) => items.map((t) => JSON.stringify(t)).join(',\n');
  return `local heads = {\n${list(heads)}\n}
local turns = {\n${list(turns)}\n}
local n = 0
request = function()
  n = n + 1
  local body = heads[(n % #heads) + 1] .. n .. ": " .. turns[(n % #turns) + 1] .. '"}]}'
  return wrk.format(nil, "/v1/chat/completions", nil, body)
end`;
}

interface Round {
  rps: number;
  cpuUs: number;
  busy: number;
  errors: number;
}

async function round(router: Server, script: string): Promise<Round> {
  const cpu0 = treeCpuMs(router.pid);
  const t0 = performance.now();
  const run: Throughput = await wrkScripted(WORK_DIR, router.url, script, C, SECONDS);
  const cpuMs = treeCpuMs(router.pid) - cpu0;
  const wallMs = performance.now() - t0;
  return { rps: run.rps, cpuUs: (cpuMs * 1000) / run.requests, busy: cpuMs / wallMs, errors: run.errors };
}

if (!hasCommand('wrk')) {
  console.error('bench:policy-wrk needs wrk (apt-get install wrk)');
  process.exit(2);
}
if (process.env.SKIP_BUILD !== '1') execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')]);
if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const servers: Server[] = [];
try {
  const engineFile = join(ROOT, 'bench/null-engine.ts');
  const listening = (out: string) => / listening on (http:\/\/\S+)/.exec(out)?.[1];
  const engines: Server[] = [];
  for (const name of ['null-a', 'null-b'])
    engines.push(await spawnServer(name, process.execPath, ['--import', 'tsx', engineFile], listening, 1));
  servers.push(...engines);
  const urls = engines.map((e) => e.url);
  const routers: Server[] = [];
  for (const t of TARGETS)
    routers.push(await startRouter(t.root, t.name.replace(/\W+/g, '-'), urls, ['--policy', t.policy], 0));
  servers.push(...routers);
  const script = requestScript();
  console.log(
    `load average ${loadavg()[0]?.toFixed(2)}; chats of about ${SIZE} characters (${SYSTEM_PROMPTS} system prompts, ` +
      `every user turn new), wrk -t1 -c${C}, ${ROUNDS} rounds of ${SECONDS} s per router; ` +
      `${PIN ? 'routers on CPU 0, engines and wrk on CPU 1' : 'no pinning'}`,
  );
  for (const r of routers) await wrkScripted(WORK_DIR, r.url, script, C, 2); // warm-up
  const runs: Round[][] = routers.map(() => []);
  const n = routers.length;
  for (let k = 0; k < ROUNDS; k++) {
    // Each round starts one router later, and every other round runs backwards.
    const order = Array.from({ length: n }, (_, i) => (i + k) % n);
    if (k % 2 === 1) order.reverse();
    for (const i of order) (runs[i] as Round[]).push(await round(routers[i] as Server, script));
  }
  console.log('\n| router | req/s, median (min–max) | CPU µs/request | core busy | errors |');
  console.log('|---|---:|---:|---:|---:|');
  TARGETS.forEach((t, i) => {
    const mine = runs[i] as Round[];
    const errors = mine.reduce((n, x) => n + x.errors, 0);
    const rps = spread(
      mine.map((x) => x.rps),
      0,
    );
    const cpu = median(mine.map((x) => x.cpuUs)).toFixed(1);
    console.log(`| ${t.name} | ${rps} | ${cpu} | ${spread(mine.map((x) => x.busy))} | ${errors} |`);
  });
  /** One figure of router `a` ÷ router `b`: per round, and the ratio of the means with its interval. */
  const ratioLine = (name: string, a: Round[], b: Round[], f: (x: Round) => number) => {
    const [mine, base] = [a.map(f), b.map(f)];
    const ofMeans = (mean(mine) / mean(base)).toFixed(3);
    return `- ${name}: ${roundRatios(mine, base, 3)}; ${ofMeans} (${intervalText(mine, base)})`;
  };
  const compare = (title: string, a: number, b: number) => {
    console.log(`\n${title}, per round median (min–max); ratio of the means with its 90 % interval:`);
    console.log(ratioLine('requests/s', runs[a] as Round[], runs[b] as Round[], (x) => x.rps));
    console.log(ratioLine('CPU per request', runs[a] as Round[], runs[b] as Round[], (x) => x.cpuUs));
  };
  compare('cache_aware ÷ round_robin', 0, 1);
  if (BASE) {
    compare('base: cache_aware ÷ round_robin', 2, 3);
    compare('cache_aware ÷ base cache_aware', 0, 2);
  }
} finally {
  for (const s of servers) await s.stop();
}
process.exit(0);
