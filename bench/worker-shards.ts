/**
 * The Worker with its fleet sharded by model pool, against the Node router, in one run: two
 * simulated engines serving two models, requests alternating between the models, the same load
 * on both targets. Reports the Worker's requests/s as a ratio to Node's, and the Durable Object
 * calls per client request of each object: the main object (`fleet`) and the two pool objects
 * (`fleet/pool:model-a`, `fleet/pool:model-b`). Cloudflare allows one object about 1,000 calls/s,
 * so the busiest object's calls per request set the fleet's ceiling (2 before sharding).
 *   npm run bench:worker-shards          # DURATION_S=10 CONNECTIONS=32 WARMUP_S=2 CALL_SAMPLE=200
 * Load: wrk (one thread, on CPU 1 when pinning) when installed, else two closed-loop undici
 * clients in this process, one per model (bench/overhead-load.ts). As in bench/worker.ts, the
 * router under test gets CPU 0 to itself with 2+ CPUs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimEngine } from '../src/sim/node.ts';
import { closedLoop } from './overhead-load.ts';
import { hasCommand } from './support.ts';
import {
  PIN,
  pin,
  sampleCalls,
  settleDown,
  startNodeRouter,
  startWorker,
  treeCpuMs,
  type WrkResult,
  wrk,
  wrkScript,
} from './worker-support.ts';

const DURATION_S = Number(process.env.DURATION_S ?? 10);
const WARMUP_S = Number(process.env.WARMUP_S ?? 2);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const CALL_SAMPLE = Number(process.env.CALL_SAMPLE ?? 200);
const MODELS = ['model-a', 'model-b'];
const WRK = hasCommand('wrk');

const bodies = MODELS.map((model) =>
  JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Say hello' }] }),
);

/** `seconds` of load on `url`, the models in turn. */
async function load(url: string, script: string, seconds: number): Promise<WrkResult> {
  if (WRK) return wrk(`${url}/v1/chat/completions`, script, seconds, CONNECTIONS);
  const per = Math.max(1, Math.floor(CONNECTIONS / bodies.length));
  const runs = await Promise.all(bodies.map((body) => closedLoop(url, body, per, 0, seconds)));
  return {
    rps: runs.reduce((s, r) => s + r.rps, 0),
    requests: runs.reduce((s, r) => s + r.requests, 0),
    p50: Math.max(...runs.map((r) => r.p50Ms)),
    p99: Math.max(...runs.map((r) => r.p99Ms)),
    errors: runs.reduce((s, r) => s + r.errors, 0),
  };
}

async function main(): Promise<void> {
  if (PIN) pin(process.pid, 1);
  const engines = await Promise.all(
    ['sim-a', 'sim-b'].map((id) =>
      startSimEngine({ id, models: MODELS, host: '127.0.0.1', port: 0, logSize: 0, ttftMs: 0, itlMs: 0 }),
    ),
  );
  const urls = engines.map((e) => e.url);
  const dir = mkdtempSync(join(tmpdir(), 'bench-worker-shards-'));
  const script = join(dir, 'models.lua');
  writeFileSync(script, wrkScript(bodies));
  let node: Awaited<ReturnType<typeof startNodeRouter>> | undefined;
  let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
  try {
    node = await startNodeRouter([
      '--worker-urls',
      ...urls,
      '--policy',
      'round_robin',
      '--log-level',
      'warn',
    ]);
    worker = await startWorker({
      workers: { urls },
      policy: { name: 'round_robin' },
      log: { level: 'warn' },
    });
    const nodePid = node.pid;
    const targets = [
      { name: 'node router (undici)', url: node.url, cpu: () => treeCpuMs(nodePid) },
      { name: 'worker (Miniflare)', url: worker.url, cpu: () => treeCpuMs(process.pid, 'workerd') },
    ];
    const rows: string[] = [];
    let nodeRps = 0;
    for (const target of targets) {
      await load(target.url, script, WARMUP_S);
      await settleDown();
      const cpuBefore = target.cpu();
      const r = await load(target.url, script, DURATION_S);
      const cpuMs = target.cpu() - cpuBefore;
      await settleDown();
      if (target.url === node.url) nodeRps = r.rps;
      rows.push(
        `| ${target.name} | ${Math.round(r.rps)} | ${(r.rps / nodeRps).toFixed(2)} | ${r.p50.toFixed(2)} | ` +
          `${r.p99.toFixed(2)} | ${(cpuMs / r.requests).toFixed(3)} | ${r.errors} |`,
      );
      process.stderr.write(`${rows.at(-1)}\n`);
    }
    const calls = await sampleCalls(worker.url, bodies, CALL_SAMPLE);
    if (!calls.has('fleet')) calls.set('fleet', {}); // the main object: no request reached it

    const loadName = WRK ? `wrk -t1 -c${CONNECTIONS}` : `2 closed-loop undici clients × ${CONNECTIONS / 2}`;
    console.log(
      `\n${loadName}, ${DURATION_S}s (after ${WARMUP_S}s warmup), 2 simulated engines serving ${MODELS.join(' and ')}, ` +
        `requests alternating between the models, round_robin, log level warn` +
        `${PIN ? '; router on CPU 0, engines and load on CPU 1' : ''}\n`,
    );
    console.log('| target | rps | ÷ node | p50 ms | p99 ms | CPU ms/req | errors |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const row of rows) console.log(row);
    console.log(
      `\nDurable Object calls per client request, by object (${CALL_SAMPLE} sequential requests):\n`,
    );
    console.log('| object | calls/request | by method |');
    console.log('|---|---:|---|');
    let busiest = 0;
    for (const [object, methods] of [...calls].sort(([a], [b]) => a.localeCompare(b))) {
      const total = Object.values(methods).reduce((s, n) => s + n, 0);
      busiest = Math.max(busiest, total);
      const by = Object.entries(methods)
        .map(([m, n]) => `${m} ${Number(n.toFixed(3))}`)
        .join(', ');
      console.log(`| ${object} | ${total.toFixed(3)} | ${by || '–'} |`);
    }
    console.log(
      `\nBusiest object: ${busiest.toFixed(3)} calls per client request, so about ` +
        `${Math.round(1000 / busiest)} client requests/s before it reaches 1,000 calls/s (one object: 2 calls, 500).`,
    );
  } finally {
    node?.child.kill('SIGTERM');
    await worker?.dispose();
    await Promise.all(engines.map((e) => e.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
