/**
 * Memory under a stream of distinct prompts: the router's RSS while the default cache_aware policy
 * sees PROMPTS distinct chats (a shared 600-character system prompt, a distinct user turn each).
 *   npm run bench:memory       # PROMPTS=200000 DURATION_SECS=300 CONCURRENCY=32 SAMPLE_SECS=15
 * The router runs as its own Node process (`node --import tsx src/adapters/node/main.ts`) with the
 * default flags plus ROUTER_FLAGS, in front of two simulated engines in this process; its RSS comes
 * from /proc/<pid>/status, the tree's estimate from /metrics (vllm_router_tree_bytes).
 * First a warm-up as fast as possible until the tree holds 85 % of its bound, then as many prompts
 * again, so that the tree has turned over once and V8 has sized its heap for the churn (WARMUP=auto;
 * or a prompt count, 0 for none; at most WARMUP_MAX=400000 prompts), then PROMPTS new distinct
 * prompts paced over DURATION_SECS (as fast as possible if the router is slower). Prints RSS over
 * time and how far the measured phase strays from its mean: flat means within ±10 %. About 9
 * minutes on 2 cores; a quick look: WARMUP=0 PROMPTS=50000 DURATION_SECS=60.
 * ROUTER_FLAGS="--max-tree-bytes 17179869184" shows the tree without a memory bound.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { type RunningSimEngine, startSimEngine } from '../src/sim/node.ts';

const env = process.env;
const PROMPTS = Number(env.PROMPTS ?? 200_000);
const DURATION_SECS = Number(env.DURATION_SECS ?? 300);
const CONCURRENCY = Number(env.CONCURRENCY ?? 32);
const SAMPLE_SECS = Number(env.SAMPLE_SECS ?? 15);
const WARMUP = env.WARMUP ?? 'auto';
const WARMUP_MAX = Number(env.WARMUP_MAX ?? 400_000);
const ROUTER_FLAGS = (env.ROUTER_FLAGS ?? '').split(/\s+/).filter((s) => s !== '');
// HEAP=1: each sample also forces a full GC in the router and reads heapUsed (bench/memory-probe.ts).
const HEAP = env.HEAP === '1';
const DEFAULT_TREE_BYTES = 67_108_864;

const SYSTEM =
  `You are the support assistant of a mountain railway. ${'Answer briefly, name the season of every timetable you quote, and never promise refunds. '.repeat(6)}`.slice(
    0,
    600,
  );
let seed = 1;
const rand = () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 4294967296;
};
const WORDS = [
  'train',
  'ticket',
  'winter',
  'summit',
  'delay',
  'refund',
  'valley',
  'snow',
  'station',
  'price',
];
// A distinct user turn of about 200 characters.
const question = (i: number) =>
  `Question ${i}: ${Array.from({ length: 28 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ')}?`;
const body = (i: number) =>
  JSON.stringify({
    model: 'sim-model',
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: question(i) },
    ],
    max_tokens: 1,
  });

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) / 1024;
}

async function treeMiB(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('vllm_router_tree_bytes')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum / 2 ** 20;
}

async function startRouter(engines: RunningSimEngine[]): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const metricsPort = await freePort();
  const probe = HEAP ? ['--expose-gc', '--import', './bench/memory-probe.ts'] : [];
  const args = ['--import', 'tsx', ...probe, 'src/adapters/node/main.ts', '--port', String(port)];
  args.push('--prometheus-port', String(metricsPort), '--log-level', 'warn', '--worker-urls');
  args.push(...engines.map((e) => e.url), ...ROUTER_FLAGS);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let pending = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.startsWith('memprobe ')) probes.push(JSON.parse(line.slice(9)) as { heapUsed: number });
      else process.stderr.write(`${line}\n`);
    }
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    const ready = await fetch(`${url}/readiness`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { child, url };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the router did not become ready');
}

interface Sample {
  phase: string;
  secs: number;
  sent: number;
  rss: number;
  tree: number;
  heap?: number;
}

const probes: { heapUsed: number }[] = [];

/** heapUsed after a full GC in the router (MiB), when HEAP=1. */
async function heapMiB(child: ChildProcess): Promise<number | undefined> {
  if (!HEAP) return undefined;
  const seen = probes.length;
  child.kill('SIGUSR2');
  for (let i = 0; i < 200 && probes.length === seen; i++) await new Promise((r) => setTimeout(r, 10));
  return (probes.at(-1)?.heapUsed ?? 0) / 2 ** 20;
}

let next = 0;
let failures = 0;

/** Sends prompts next..until-1 at `CONCURRENCY`, the i-th not before `due(i)`. */
async function drive(url: string, until: number, due: (i: number) => number): Promise<void> {
  const worker = async () => {
    for (let i = next++; i < until; i = next++) {
      const wait = due(i) - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(i),
      }).catch(() => undefined);
      if (res?.status !== 200) failures++;
      await res?.arrayBuffer();
    }
    next = Math.max(next, until);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  next = until;
}

function sampler(child: ChildProcess, url: string, samples: Sample[], t0: number) {
  let phase = 'warm-up';
  const take = async () => {
    const secs = (performance.now() - t0) / 1000;
    const rss = rssMiB(child.pid as number);
    const sample: Sample = { phase, secs, sent: next, rss, tree: await treeMiB(url) };
    const heap = await heapMiB(child);
    samples.push(heap === undefined ? sample : { ...sample, heap });
  };
  const timer = setInterval(() => void take(), SAMPLE_SECS * 1000);
  return {
    take,
    setPhase: (p: string) => {
      phase = p;
    },
    stop: () => clearInterval(timer),
  };
}

function treeBound(): number {
  const i = ROUTER_FLAGS.indexOf('--max-tree-bytes');
  return i < 0 ? DEFAULT_TREE_BYTES : Number(ROUTER_FLAGS[i + 1]);
}

async function warmUp(url: string): Promise<void> {
  if (WARMUP !== 'auto') return drive(url, Number(WARMUP), () => 0);
  const goal = (0.85 * treeBound()) / 2 ** 20;
  while (next < WARMUP_MAX && (await treeMiB(url)) < goal)
    await drive(url, Math.min(next + 10_000, WARMUP_MAX), () => 0);
  // As many prompts again: the tree's content turns over once and V8 sizes its heap for the churn.
  await drive(url, Math.min(2 * next, WARMUP_MAX), () => 0);
}

async function main(): Promise<void> {
  const sim = { tokens: 1, ttftMs: 0, itlMs: 0, blockMs: 0, cacheBlocks: 0, logSize: 0 };
  const engines = await Promise.all([
    startSimEngine({ ...sim, id: 'e0' }),
    startSimEngine({ ...sim, id: 'e1' }),
  ]);
  const { child, url } = await startRouter(engines);
  const samples: Sample[] = [];
  const t0 = performance.now();
  const s = sampler(child, url, samples, t0);
  await s.take();
  await warmUp(url);
  s.setPhase('measured');
  await s.take();
  const start = next;
  const tStart = performance.now();
  const interval = (DURATION_SECS * 1000) / PROMPTS;
  await drive(url, start + PROMPTS, (i) => tStart + (i - start) * interval);
  await s.take();
  s.stop();
  report(samples, start, (performance.now() - tStart) / 1000);
  child.kill('SIGTERM');
  await Promise.all(engines.map((e) => e.close()));
}

function report(samples: Sample[], warmed: number, secs: number): void {
  console.log(
    `router flags: defaults${ROUTER_FLAGS.length ? ` + ${ROUTER_FLAGS.join(' ')}` : ''}; node ${process.version}`,
  );
  console.log(
    `warm-up: ${warmed} prompts; measured: ${PROMPTS} distinct prompts in ${secs.toFixed(0)} s; failed requests: ${failures}\n`,
  );
  const heapCol = HEAP ? ' router heapUsed after GC (MiB) |' : '';
  console.log(`| phase | t (s) | prompts sent | tree estimate (MiB) | router RSS (MiB) |${heapCol}`);
  console.log(`|---|---|---|---|---|${HEAP ? '---|' : ''}`);
  for (const x of samples) {
    const heap = x.heap === undefined ? '' : ` ${x.heap.toFixed(1)} |`;
    console.log(
      `| ${x.phase} | ${x.secs.toFixed(0)} | ${x.sent} | ${x.tree.toFixed(1)} | ${x.rss.toFixed(0)} |${heap}`,
    );
  }
  const measured = samples.filter((x) => x.phase === 'measured').map((x) => x.rss);
  const mean = measured.reduce((a, b) => a + b, 0) / measured.length;
  const lo = (Math.min(...measured) / mean - 1) * 100;
  const hi = (Math.max(...measured) / mean - 1) * 100;
  const first = measured[0] as number;
  const last = measured.at(-1) as number;
  console.log(
    `\nmeasured phase RSS: mean ${mean.toFixed(0)} MiB, ${lo.toFixed(1)} % / +${hi.toFixed(1)} % around it; first → last ${first.toFixed(0)} → ${last.toFixed(0)} MiB (${((last / first - 1) * 100).toFixed(1)} %)`,
  );
}

await main();
