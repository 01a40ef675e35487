/**
 * The Cloudflare Worker against the Node router, in one run: requests/s through Miniflare
 * (workerd running the bundled Worker and its FleetObject; not `wrangler dev`, whose proxy costs
 * about 10x) and through the Node adapter, with the same simulated engines, the same load (wrk,
 * same connections) and the same router config; plus the Durable Object calls per request.
 *   npm run bench:worker                 # DURATION_S=10 CONNECTIONS=32 WARMUP_S=2
 * With 2+ CPUs the router under test (the Node process, or workerd) gets CPU 0 to itself; the
 * engines, wrk and this script share CPU 1. "CPU ms/req" is the router process's user+system time
 * over the measured run divided by the requests served (steadier than requests/s on a noisy VM).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { startSimEngine } from '../src/sim/node.ts';
import { startMiniflareWorker } from '../test/runtime/workerd/miniflare-worker.ts';
import { hasCommand } from './support.ts';

const DURATION_S = Number(process.env.DURATION_S ?? 10);
const WARMUP_S = Number(process.env.WARMUP_S ?? 2);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const CALL_SAMPLE = 200;
const PIN = cpus().length >= 2 && hasCommand('taskset');
const TICK_MS = 10; // /proc/<pid>/stat times are in clock ticks (USER_HZ = 100)

function pin(pid: number, cpu: number): void {
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
function tree(root: number, comm?: string): { pid: number; cpuMs: number }[] {
  const table = processTable();
  const found: { pid: number; cpuMs: number }[] = [];
  for (const [pid, p] of table) {
    let cur: number | undefined = pid;
    while (cur !== undefined && cur !== root && cur > 1) cur = table.get(cur)?.ppid;
    if (cur === root && (comm === undefined || p.comm === comm)) found.push({ pid, cpuMs: p.cpuMs });
  }
  return found;
}

const treeCpuMs = (root: number, comm?: string) => tree(root, comm).reduce((sum, p) => sum + p.cpuMs, 0);

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

async function waitReady(url: string): Promise<void> {
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
const settleDown = () => new Promise((r) => setTimeout(r, 500));

interface WrkResult {
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

/** Runs wrk (asynchronously: the engines serve from this process's event loop). */
async function wrk(url: string, script: string, seconds: number): Promise<WrkResult> {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', script, url];
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

/** Durable Object calls by method, from the Worker's /metrics (all but the scrape itself). */
async function objectCalls(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const calls: Record<string, number> = {};
  for (const m of text.matchAll(/^vllm_router_fleet_object_calls_total\{method="(\w+)"\} (\d+)$/gm)) {
    if (m[1] !== 'metricsText') calls[m[1] as string] = Number(m[2]);
  }
  return calls;
}

/**
 * Object calls per request, over CALL_SAMPLE sequential requests read to their end (under wrk,
 * the requests it cuts at the end of a run would blur the count).
 */
async function callsPerRequest(url: string, body: string): Promise<string> {
  const before = await objectCalls(url);
  for (let i = 0; i < CALL_SAMPLE; i++) {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await res.arrayBuffer();
  }
  await settleDown();
  const after = await objectCalls(url);
  return Object.entries(after)
    .map(([m, n]) => [m, (n - (before[m] ?? 0)) / CALL_SAMPLE] as const)
    .filter(([, n]) => n > 0)
    .map(([m, n]) => `${m} ${n}`)
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

async function main(): Promise<void> {
  if (!hasCommand('wrk')) throw new Error('wrk is required (apt-get install wrk)');
  if (PIN) pin(process.pid, 1);
  const engines = await Promise.all(
    ['sim-a', 'sim-b'].map((id) => startSimEngine({ id, host: '127.0.0.1', port: 0, logSize: 0 })),
  );
  const urls = engines.map((e) => e.url);
  const routerConfig = {
    workers: { urls },
    policy: { name: 'round_robin' },
    log: { level: 'warn' },
  };
  const dir = mkdtempSync(join(tmpdir(), 'bench-worker-'));
  const scripts = {
    json: join(dir, 'json.lua'),
    stream: join(dir, 'stream.lua'),
  };
  const bodies = {
    json: JSON.stringify({
      model: 'sim-model',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Say hello' }],
    }),
    stream: JSON.stringify({
      model: 'sim-model',
      stream: true,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Say hello' }],
    }),
  };
  const lua = (body: string) =>
    `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = '${body}'\n`;
  writeFileSync(scripts.json, lua(bodies.json));
  writeFileSync(scripts.stream, lua(bodies.stream));

  let node: ChildProcess | undefined;
  let worker: Awaited<ReturnType<typeof startMiniflareWorker>> | undefined;
  try {
    const port = await freePort();
    const nodeArgs = [
      '--import',
      'tsx',
      'src/adapters/node/main.ts',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
    ];
    nodeArgs.push('--worker-urls', ...urls, '--policy', 'round_robin', '--log-level', 'warn');
    nodeArgs.push('--prometheus-port', '0');
    node = spawn(process.execPath, nodeArgs, { stdio: ['ignore', 'ignore', 'inherit'] });
    const nodeUrl = `http://127.0.0.1:${port}`;
    await waitReady(nodeUrl);
    const nodePid = node.pid as number;
    pin(nodePid, 0);

    worker = await startMiniflareWorker({ routerConfig, miniflare: { handleRuntimeStdio: quietRuntime } });
    await waitReady(worker.url);
    for (const { pid } of tree(process.pid, 'workerd')) pin(pid, 0);

    const workerUrl = worker.url;
    const targets = [
      { name: 'node router (undici)', url: nodeUrl, cpu: () => treeCpuMs(nodePid) },
      { name: 'worker (Miniflare)', url: worker.url, cpu: () => treeCpuMs(process.pid, 'workerd') },
    ];
    const scenarios = [
      {
        name: 'non-streaming',
        script: scripts.json,
        body: bodies.json,
        engine: { ttftMs: 0, itlMs: 0, tokens: 16 },
      },
      {
        name: 'streaming (ttft 5 ms, 2 ms/token)',
        script: scripts.stream,
        body: bodies.stream,
        engine: { ttftMs: 5, itlMs: 2, tokens: 16 },
      },
    ];

    const rows: string[] = [];
    for (const scenario of scenarios) {
      for (const e of engines) e.engine.configure(scenario.engine);
      let nodeRps = 0;
      for (const target of targets) {
        await wrk(`${target.url}/v1/chat/completions`, scenario.script, WARMUP_S);
        await settleDown();
        const cpuBefore = target.cpu();
        const r = await wrk(`${target.url}/v1/chat/completions`, scenario.script, DURATION_S);
        const cpuMs = target.cpu() - cpuBefore;
        await settleDown();
        const perRequest = target.url === workerUrl ? await callsPerRequest(workerUrl, scenario.body) : '–';
        if (target.url === nodeUrl) nodeRps = r.rps;
        rows.push(
          `| ${scenario.name} | ${target.name} | ${Math.round(r.rps)} | ${(r.rps / nodeRps).toFixed(2)} | ` +
            `${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(cpuMs / r.requests).toFixed(3)} | ${r.errors} | ${perRequest} |`,
        );
        process.stderr.write(`${rows.at(-1)}\n`);
      }
    }

    console.log(
      `\nwrk -t1 -c${CONNECTIONS} -d${DURATION_S}s (after ${WARMUP_S}s warmup), 2 simulated engines, round_robin, ` +
        `log level warn${PIN ? '; router on CPU 0, engines + wrk on CPU 1' : ''}\n`,
    );
    console.log(
      '| scenario | target | rps | ÷ node | p50 ms | p99 ms | CPU ms/req | errors | DO calls/req |',
    );
    console.log('|---|---|---:|---:|---:|---:|---:|---:|---|');
    for (const row of rows) console.log(row);
  } finally {
    node?.kill('SIGTERM');
    await worker?.dispose();
    await Promise.all(engines.map((e) => e.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
