/**
 * Concurrent large request bodies against the router-wide buffer budget:
 *   npx tsx bench/memory-bodies.ts        # BODIES=4 BODY_MB=200 ROUTER_FLAGS=
 * The router runs as its own Node process with the default flags plus ROUTER_FLAGS (compare
 * ROUTER_FLAGS="--max-buffered-bytes-total 0": no budget) in front of one simulated engine in this
 * process. BODIES chat requests of BODY_MB megabytes each are sent at once over loopback; prints
 * each status, how many reached the engine, and the router's peak RSS (/proc/<pid>/status VmHWM).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { startSimEngine } from '../src/sim/node.ts';

const BODIES = Number(process.env.BODIES ?? 4);
const BODY_MB = Number(process.env.BODY_MB ?? 200);
const ROUTER_FLAGS = (process.env.ROUTER_FLAGS ?? '').split(/\s+/).filter((s) => s !== '');
const PORT = 30_000 + Math.floor(Math.random() * 20_000);

function status(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) / 1024;
}

const engine = await startSimEngine({ id: 'e0', tokens: 1, ttftMs: 0, itlMs: 0, logSize: 100 });
const args = ['--import', 'tsx', 'src/adapters/node/main.ts', '--port', String(PORT), '--log-level', 'warn'];
const child = spawn(process.execPath, [...args, '--worker-urls', engine.url, ...ROUTER_FLAGS], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
const url = `http://127.0.0.1:${PORT}`;
for (let i = 0; i < 300; i++) {
  if (
    await fetch(`${url}/readiness`).then(
      (r) => r.ok,
      () => false,
    )
  )
    break;
  await new Promise((r) => setTimeout(r, 100));
}
const pid = child.pid as number;
const idle = status(pid, 'VmRSS');
const body = Buffer.from(
  JSON.stringify({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'x'.repeat(BODY_MB * 1_000_000) }],
    max_tokens: 1,
  }),
);
const before = engine.engine.log.length;
const results = await Promise.all(
  Array.from({ length: BODIES }, async () => {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(body.byteLength) },
      body,
      headersTimeout: 600_000,
      bodyTimeout: 600_000,
    });
    await res.body.dump();
    return res.statusCode === 200 ? '200' : `${res.statusCode} ${res.headers['x-router-error-code']}`;
  }),
);
console.log(`router flags: defaults${ROUTER_FLAGS.length ? ` + ${ROUTER_FLAGS.join(' ')}` : ''}`);
console.log(
  `${BODIES} concurrent bodies of ${(body.byteLength / 2 ** 20).toFixed(0)} MiB: ${results.join(', ')}`,
);
console.log(`reached the engine: ${engine.engine.log.length - before}`);
console.log(`router RSS: idle ${idle.toFixed(0)} MiB, peak ${status(pid, 'VmHWM').toFixed(0)} MiB`);
child.kill('SIGTERM');
await engine.close();
