/**
 * Pieces of `npm run bench:pd`: the router as a separate process (its CPU time read from
 * /proc/<pid>/stat), the prompts, a streaming client, closed-loop load and percentiles.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasCommand, prng } from './support.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** With 2+ CPUs the routers get CPU 0; this process (engines and client) runs on CPU 1. */
export const PIN = cpus().length >= 2 && hasCommand('taskset');

export function pin(pid: number, cpu: number): void {
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

const TICK_MS = (() => {
  try {
    return 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  } catch {
    return 10;
  }
})();

/**
 * CPU time of a process (all its threads), in ms: the scheduler's nanosecond run time of each
 * thread (/proc/<pid>/task/<tid>/schedstat), else utime + stime, which count whole clock ticks
 * (10 ms: a burst of 1,000 requests at 100 µs each would be read to within 10 %).
 */
export function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    }
    if (Number.isFinite(ns) && ns > 0) return ns / 1e6;
  } catch {
    // no schedstat (or the process is gone): the tick counts below
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** Routers still running: killed if this process exits without stopping them (an error, Ctrl-C). */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

export interface RouterProcess {
  name: string;
  url: string;
  pid: number;
  /** Chat requests sent to it with `post` so far. */
  sent: number;
  /** Streams one chat completion through it. */
  post(body: string): Promise<Sample>;
  /** Resolves once the router has logged every chat request sent to it so far. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `vllm-edge-router` as its own process, on 127.0.0.1 port 0 (the port is read from its listening
 * line). ROUTER=dist runs dist/node/main.js (after `npm run build`); the default runs the sources
 * through tsx, as `npm run dev` does.
 */
export async function startRouter(name: string, args: string[]): Promise<RouterProcess> {
  const entry =
    process.env.ROUTER === 'dist'
      ? [join(ROOT, 'dist/node/main.js')]
      : ['--import', 'tsx', join(ROOT, 'src/adapters/node/main.ts')];
  if (process.env.ROUTER === 'dist' && !existsSync(entry[0] as string)) {
    throw new Error('ROUTER=dist: run `npm run build` first');
  }
  const common = ['--host', '127.0.0.1', '--port', '0', '--prometheus-port', '0', '--policy', 'round_robin'];
  const child: ChildProcess = spawn(process.execPath, [...entry, ...common, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let requests = 0;
  let pending = '';
  let waiters: { n: number; resolve: () => void }[] = [];
  let output = '';
  let ready = false;
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name}: router exited (${code}):\n${output}`)));
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
    child.stdout?.on('data', (d: Buffer) => {
      const lines = (pending + d.toString('utf8')).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (output.length < 20_000) output += `${line}\n`;
        const m = / listening on (http:\/\/\S+)/.exec(line);
        if (m) resolve(m[1] as string);
        if (/ (INFO|WARN|ERROR) +request request_id=\S+ route=\/v1\/chat\/completions /.test(line))
          requests++;
        else if (ready && / (WARN|ERROR) /.test(line)) process.stderr.write(`[${name}] ${line}\n`);
      }
      for (const w of waiters.filter((w) => requests >= w.n)) w.resolve();
      waiters = waiters.filter((w) => requests < w.n);
    });
  });
  const pid = child.pid as number;
  pin(pid, 0);
  await waitReady(url);
  ready = true;
  const router: RouterProcess = {
    name,
    url,
    pid,
    sent: 0,
    post: (body) => {
      router.sent++;
      return streamPost(`${url}/v1/chat/completions`, body);
    },
    settled: () => {
      const n = router.sent;
      if (requests >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name}: ${requests} of ${n} requests logged`)),
          30_000,
        );
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        waiters.push({ n, resolve: done });
      });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
  return router;
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      const res = await fetch(`${url}/readiness`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never became ready`);
}

const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike oscar'.split(
  ' ',
);
function text(rand: () => number, chars: number): string {
  let s = '';
  while (s.length < chars) s += `${WORDS[Math.floor(rand() * WORDS.length)]} `;
  return s.slice(0, chars);
}

/** Chat bodies: one shared system prompt of `sharedChars`, then a distinct user part of `ownChars`. */
export function promptBodies(count: number, sharedChars: number, ownChars: number, tokens: number): string[] {
  const system = `You are the support assistant. Rules: ${text(prng(7), sharedChars)}`;
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      model: 'sim-model',
      stream: true,
      max_tokens: tokens,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `Ticket ${i}: ${text(prng(1000 + i), ownChars)}` },
      ],
    }),
  );
}

export interface Sample {
  status: number;
  ttftMs: number;
  totalMs: number;
}

/** One streamed request: time to the first body chunk and to the end of the body. */
export async function streamPost(url: string, body: string, headers: Record<string, string> = {}) {
  const started = performance.now();
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    let ttftMs = -1;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done } = await reader.read();
      if (ttftMs < 0) ttftMs = performance.now() - started;
      if (done) break;
    }
    return { status: res.status, ttftMs, totalMs: performance.now() - started };
  } catch {
    return { status: 0, ttftMs: -1, totalMs: performance.now() - started };
  }
}

const NIXL_PREFILL = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
};

/** The two NIXL legs sent by the client itself (no router): the floor of a PD request. */
export async function directPd(prefillUrl: string, decodeUrl: string, body: string): Promise<Sample> {
  const started = performance.now();
  const json = JSON.parse(body) as Record<string, unknown>;
  const headers = { 'content-type': 'application/json', 'x-request-id': randomUUID() };
  const prefill = { ...json, stream: false, max_tokens: 1, kv_transfer_params: NIXL_PREFILL };
  const res = await fetch(`${prefillUrl}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify(prefill),
  });
  const answer = (await res.json()) as { kv_transfer_params?: unknown };
  if (res.status !== 200) return { status: res.status, ttftMs: -1, totalMs: performance.now() - started };
  const decode = JSON.stringify({ ...json, kv_transfer_params: answer.kv_transfer_params });
  const s = await streamPost(`${decodeUrl}/v1/chat/completions`, decode, headers);
  const shift = performance.now() - started - s.totalMs;
  return { status: s.status, ttftMs: s.ttftMs + shift, totalMs: s.totalMs + shift };
}

/** `count` requests from `concurrency` closed-loop clients; `send(i)` sends request i (sample i). */
export async function load(
  count: number,
  concurrency: number,
  send: (i: number) => Promise<Sample>,
): Promise<{ samples: Sample[]; wallMs: number }> {
  const samples: Sample[] = [];
  let next = 0;
  const started = performance.now();
  const client = async () => {
    for (let i = next++; i < count; i = next++) samples[i] = await send(i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, client));
  return { samples, wallMs: performance.now() - started };
}

/** The q-quantile (0..1) of `values` (nearest rank). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** "median (min–max)" of repeats, or the one value. */
export function spread(values: number[], digits = 1): string {
  const f = (v: number) => v.toFixed(digits);
  if (values.length === 1) return f(values[0] as number);
  return `${f(quantile(values, 0.5))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}
