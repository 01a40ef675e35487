/**
 * What the Worker benchmarks share (bench/worker.ts, bench/worker-shards.ts): CPU pinning and
 * per-process CPU time from /proc, wrk runs, the Node router as a child process, the Worker in
 * Miniflare, and the Durable Object call counters the Worker's /metrics shows per object.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { cpus } from 'node:os';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { startMiniflareWorker } from '../test/runtime/workerd/miniflare-worker.ts';
import { hasCommand } from './support.ts';

export const PIN = cpus().length >= 2 && hasCommand('taskset');
const TICK_MS = 10; // /proc/<pid>/stat times are in clock ticks (USER_HZ = 100)

export function pin(pid: number, cpu: number): void {
  if (PIN) execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** pid → [ppid, comm, cpu ms] for every process. */
function processTable(): Map<number, { ppid: number; comm: string; cpuMs: number }> {
  const table = new Map<number, { ppid: number; comm: string; cpuMs: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      const cpuMs = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
      table.set(Number(entry), { ppid: Number(fields[1]), comm, cpuMs });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** `root` and its descendants (optionally only those named `comm`), with their CPU ms so far. */
export function tree(root: number, comm?: string): { pid: number; cpuMs: number }[] {
  const table = processTable();
  const found: { pid: number; cpuMs: number }[] = [];
  for (const [pid, p] of table) {
    let cur: number | undefined = pid;
    while (cur !== undefined && cur !== root && cur > 1) cur = table.get(cur)?.ppid;
    if (cur === root && (comm === undefined || p.comm === comm)) found.push({ pid, cpuMs: p.cpuMs });
  }
  return found;
}

export const treeCpuMs = (root: number, comm?: string) =>
  tree(root, comm).reduce((sum, p) => sum + p.cpuMs, 0);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/readiness`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never became ready`);
}

/** Lets the requests wrk cut at the end of a run finish before reading counters. */
export const settleDown = () => new Promise((r) => setTimeout(r, 500));

export interface WrkResult {
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  errors: number;
}

function toMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text.trim());
  if (!m) return Number.NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/** Runs wrk (asynchronously: the engines serve from this process's event loop), on CPU 1 when pinning. */
export async function wrk(
  url: string,
  script: string,
  seconds: number,
  connections: number,
): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  const run = promisify(execFile);
  const { stdout: out } = PIN ? await run('taskset', ['-c', '1', 'wrk', ...args]) : await run('wrk', args);
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    p50: toMs(/\n\s+50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    errors: num(/Non-2xx or 3xx responses: (\d+)/) + num(/Socket errors: connect (\d+)/),
  };
}

/**
 * Durable Object calls from the Worker's /metrics: object name → method → calls (all but the
 * scrapes themselves).
 */
export async function objectCalls(url: string): Promise<Map<string, Record<string, number>>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const calls = new Map<string, Record<string, number>>();
  const series = /^vllm_router_fleet_object_calls_total\{method="(\w+)",object="([^"]*)"\} (\d+)$/gm;
  for (const [, method, object, n] of text.matchAll(series)) {
    if (method === 'metricsText') continue;
    const byMethod = calls.get(object as string) ?? {};
    byMethod[method as string] = Number(n);
    calls.set(object as string, byMethod);
  }
  return calls;
}

/** The calls made between two `objectCalls` readings, per request: object → method → calls. */
export function callsPerRequest(
  before: Map<string, Record<string, number>>,
  after: Map<string, Record<string, number>>,
  requests: number,
): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  for (const [object, methods] of after) {
    const was = before.get(object) ?? {};
    const made: Record<string, number> = {};
    for (const [m, n] of Object.entries(methods)) {
      const d = n - (was[m] ?? 0);
      if (d > 0) made[m] = d / requests;
    }
    if (Object.keys(made).length > 0) out.set(object, made);
  }
  return out;
}

/** One table cell: `route 1, settle 1` (the calls of every object summed, by method). */
export function sumByMethod(calls: Map<string, Record<string, number>>): string {
  const sum: Record<string, number> = {};
  for (const methods of calls.values()) {
    for (const [m, n] of Object.entries(methods)) sum[m] = (sum[m] ?? 0) + n;
  }
  return Object.entries(sum)
    .map(([m, n]) => `${m} ${Number(n.toFixed(3))}`)
    .join(', ');
}

/** Drops workerd's complaints about the connections wrk cuts at the end of a run. */
function quietRuntime(stdout: Readable, stderr: Readable): void {
  stdout.pipe(process.stdout);
  let skipping = false;
  createInterface({ input: stderr }).on('line', (line) => {
    if (/disconnected: ::write|Connection reset by peer|Broken pipe/.test(line)) skipping = true;
    else if (!(skipping && line.startsWith('stack:'))) {
      skipping = false;
      process.stderr.write(`${line}\n`);
    }
  });
}

/** The Node router as a child process on a free loopback port, pinned to CPU 0. */
export async function startNodeRouter(
  flags: string[],
): Promise<{ url: string; pid: number; child: ChildProcess }> {
  const port = await freePort();
  const args = [
    '--import',
    'tsx',
    'src/adapters/node/main.ts',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
  ];
  const child = spawn(process.execPath, [...args, ...flags, '--prometheus-port', '0'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url);
  pin(child.pid as number, 0);
  return { url, pid: child.pid as number, child };
}

/** The bundled Worker in Miniflare (workerd), its processes pinned to CPU 0. */
export async function startWorker(
  routerConfig: object,
): Promise<Awaited<ReturnType<typeof startMiniflareWorker>>> {
  const worker = await startMiniflareWorker({
    routerConfig,
    miniflare: { handleRuntimeStdio: quietRuntime },
  });
  await waitReady(worker.url);
  for (const { pid } of tree(process.pid, 'workerd')) pin(pid, 0);
  return worker;
}

/** A wrk script posting `bodies` in turn (one per request). */
export function wrkScript(bodies: readonly string[]): string {
  const list = bodies.map((b) => `'${b}'`).join(', ');
  return [
    'wrk.method = "POST"',
    'wrk.headers["Content-Type"] = "application/json"',
    `local bodies = { ${list} }`,
    'local i = 0',
    'request = function()',
    '  i = i % #bodies + 1',
    '  return wrk.format(nil, nil, nil, bodies[i])',
    'end',
    '',
  ].join('\n');
}

/**
 * Object calls per request over `count` sequential requests (cycling through `bodies`), each read
 * to its end: under wrk, the requests it cuts at the end of a run would blur the count.
 */
export async function sampleCalls(
  url: string,
  bodies: readonly string[],
  count: number,
): Promise<Map<string, Record<string, number>>> {
  const before = await objectCalls(url);
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bodies[i % bodies.length],
    });
    await res.arrayBuffer();
  }
  await settleDown();
  return callsPerRequest(before, await objectCalls(url), count);
}
