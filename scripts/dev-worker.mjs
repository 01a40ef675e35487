#!/usr/bin/env node
/**
 * `npm run dev:worker [-- <wrangler dev flags>]`: the Cloudflare Worker under `wrangler dev` on
 * 127.0.0.1:8787, fully local (no remote bindings, no account), with wrangler's telemetry off and
 * its settings and logs kept in .wrangler/ instead of the home directory. wrangler.toml configures
 * no engine (a deploy must name reachable ones), so this passes a ROUTER_CONFIG routing to engines
 * on 127.0.0.1:8001 and :8002 unless one is given:
 *   npm run sim -- --port 8001 & npm run sim -- --port 8002 & npm run dev:worker
 * Extra flags go to `wrangler dev` (e.g. `-- --port 8788`, or `-- --var ROUTER_CONFIG:'{...}'`).
 * Stop it with Ctrl-C (wrangler runs several processes; they all stop with it).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wrangler = createRequire(import.meta.url).resolve('wrangler/bin/wrangler.js');

const args = process.argv.slice(2).filter((a) => a !== '--');
const has = (flag) => args.some((a) => a === flag || a.startsWith(`${flag}=`));
const givesConfig = args.some((a, i) => a.startsWith('ROUTER_CONFIG:') && args[i - 1] === '--var');
const localConfig = {
  workers: { urls: ['http://127.0.0.1:8001', 'http://127.0.0.1:8002'] },
  health: { intervalSecs: 10, failureThreshold: 3, successThreshold: 2 },
  server: { requestTimeoutSecs: 600 },
  log: { level: 'info', json: true },
};
const defaults = [
  ...(givesConfig ? [] : ['--var', `ROUTER_CONFIG:${JSON.stringify(localConfig)}`]),
  ...(has('--ip') ? [] : ['--ip', '127.0.0.1']),
  ...(has('--port') ? [] : ['--port', '8787']),
  ...(has('--local') || has('--remote') ? [] : ['--local']),
  ...(has('--show-interactive-dev-session') ? [] : ['--show-interactive-dev-session=false']),
];

const child = spawn(process.execPath, [wrangler, 'dev', ...defaults, ...args], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    WRANGLER_SEND_METRICS: 'false',
    XDG_CONFIG_HOME: join(root, '.wrangler', 'config'),
  },
});

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal === 'SIGINT' ? 130 : 143);
});
