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
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimEngine } from '../src/sim/node.ts';
import { hasCommand } from './support.ts';
import {
  PIN,
  pin,
  sampleCalls,
  settleDown,
  startNodeRouter,
  startWorker,
  sumByMethod,
  treeCpuMs,
  wrk,
  wrkScript,
} from './worker-support.ts';

const DURATION_S = Number(process.env.DURATION_S ?? 10);
const WARMUP_S = Number(process.env.WARMUP_S ?? 2);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const CALL_SAMPLE = 200;

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
  writeFileSync(scripts.json, wrkScript([bodies.json]));
  writeFileSync(scripts.stream, wrkScript([bodies.stream]));

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
    const { url: nodeUrl, pid: nodePid } = node;
    worker = await startWorker(routerConfig);
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
        await wrk(`${target.url}/v1/chat/completions`, scenario.script, WARMUP_S, CONNECTIONS);
        await settleDown();
        const cpuBefore = target.cpu();
        const r = await wrk(`${target.url}/v1/chat/completions`, scenario.script, DURATION_S, CONNECTIONS);
        const cpuMs = target.cpu() - cpuBefore;
        await settleDown();
        const perRequest =
          target.url === workerUrl
            ? sumByMethod(await sampleCalls(workerUrl, [scenario.body], CALL_SAMPLE))
            : '–';
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
