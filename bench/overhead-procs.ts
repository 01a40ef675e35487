/**
 * Processes of `npm run bench`: simulated engines, the proxies under test (the router, the floor
 * proxy, nginx), each a separate process whose output goes to a file (reading a router's info log
 * through a pipe would cost the measuring process CPU), pinned with taskset when available.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PIN } from './pd-support.ts';
import { hasCommand } from './support.ts';

export { hasCommand, PIN };
export const WORK_DIR = mkdtempSync(join(tmpdir(), 'bench-overhead-'));

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  if (process.env.KEEP_LOGS !== '1') rmSync(WORK_DIR, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

export interface Server {
  name: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Spawns `command args` with its output in a file and resolves once `ready(output)` returns its
 * URL (within `waitMs`); the process is pinned to `cpu` (when pinning is on).
 */
export async function spawnServer(
  name: string,
  command: string,
  args: string[],
  ready: (output: string) => string | undefined | Promise<string | undefined>,
  cpu: number,
  waitMs = 10_000,
): Promise<Server> {
  const logPath = join(WORK_DIR, `${name}.log`);
  const fd = openSync(logPath, 'w');
  // taskset execs the command: the child's pid is the server's, and every thread or forked worker
  // it starts inherits the CPU.
  const argv = PIN ? ['-c', String(cpu), command, ...args] : args;
  const child = spawn(PIN ? 'taskset' : command, argv, { stdio: ['ignore', fd, fd] });
  children.add(child);
  let exited = false;
  child.once('exit', () => {
    exited = true;
    children.delete(child);
  });
  const pid = child.pid as number;
  let url: string | undefined;
  for (let i = 0; i < waitMs / 25 && url === undefined; i++) {
    if (exited) throw new Error(`${name} exited:\n${readFileSync(logPath, 'utf8').slice(0, 4000)}`);
    await pause(25);
    url = await ready(readFileSync(logPath, 'utf8'));
  }
  if (url === undefined) throw new Error(`${name} never became ready (log: ${logPath})`);
  return {
    name,
    url,
    pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * A readiness check for `spawnServer`: a router on a random local port, ready once `path` answers
 * (with 200 when `ok` is set).
 */
export function answeringAt(
  path: string,
  ok = false,
): { url: string; ready: () => Promise<string | undefined> } {
  const port = 10000 + Math.floor(Math.random() * 20000);
  const url = `http://127.0.0.1:${port}`;
  const ready = async () => {
    try {
      const res = await fetch(`${url}${path}`);
      await res.arrayBuffer();
      return !ok || res.status === 200 ? url : undefined;
    } catch {
      return undefined;
    }
  };
  return { url, ready };
}

const listeningOn = (output: string) => / listening on (http:\/\/[^\s"]+)/.exec(output)?.[1];

/** One simulated engine (dist/node/sim.js), zero latency, request log off. */
export function startEngine(root: string, name: string, cpu: number): Promise<Server> {
  const args = [join(root, 'dist/node/sim.js'), '--host', '127.0.0.1', '--port', '0', '--log-size', '0'];
  return spawnServer(name, process.execPath, args, listeningOn, cpu);
}

export function startRouter(
  root: string,
  name: string,
  engines: string[],
  extra: string[],
  cpu: number,
  nodeFlags: string[] = [],
) {
  const args = [
    ...nodeFlags,
    join(root, 'dist/node/main.js'),
    ...['--host', '127.0.0.1', '--port', '0', '--prometheus-port', '0'],
    ...['--worker-urls', ...engines],
    ...extra,
  ];
  return spawnServer(name, process.execPath, args, listeningOn, cpu);
}

/** The router under Deno (the same core), with its default policy, as `deno task start` runs it. */
export function startDenoRouter(root: string, engines: string[], cpu: number, denoFlags: string[] = []) {
  const deno = join(root, 'node_modules/deno/deno');
  const args = [
    ...['run', ...denoFlags, '--allow-net', '--allow-env', '--allow-read'],
    join(root, 'src/adapters/deno/main.ts'),
    ...['--host', '127.0.0.1', '--port', '0', '--prometheus-port', '0'],
    ...['--worker-urls', ...engines],
  ];
  process.env.DENO_DIR ??= join(root, '.deno');
  process.env.DENO_NO_UPDATE_CHECK = '1';
  return spawnServer('deno', deno, args, listeningOn, cpu);
}

/** Sets the simulated engines' latencies (`ttft-ms`, `itl-ms`) through their /admin/config. */
export async function configureEngines(engines: Server[], config: Record<string, number>): Promise<void> {
  for (const e of engines) {
    const res = await fetch(`${e.url}/admin/config`, { method: 'POST', body: JSON.stringify(config) });
    if (res.status !== 200) throw new Error(`${e.name}: /admin/config answered ${res.status}`);
    await res.arrayBuffer();
  }
}

/** The floor on Deno (bench/deno/floor-proxy.ts): what Deno itself costs a proxy, routing aside. */
export function startDenoFloor(root: string, engines: string[], cpu: number, denoFlags: string[] = []) {
  const deno = join(root, 'node_modules/deno/deno');
  const floor = join(root, 'bench/deno/floor-proxy.ts');
  const args = ['run', ...denoFlags, '--allow-net', floor, '0', engines.join(',')];
  process.env.DENO_DIR ??= join(root, '.deno');
  process.env.DENO_NO_UPDATE_CHECK = '1';
  return spawnServer('deno_floor', deno, args, listeningOn, cpu);
}

export function startFloor(
  root: string,
  engines: string[],
  cpu: number,
  nodeFlags: string[] = [],
  name = 'floor',
) {
  const args = [...nodeFlags, '--import', 'tsx', join(root, 'bench/floor-proxy.ts'), '0', engines.join(',')];
  return spawnServer(name, process.execPath, args, listeningOn, cpu);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** nginx with one worker, keep-alive upstream connections and unbuffered proxying (SSE-safe). */
export async function startNginx(engines: string[], cpu: number): Promise<Server> {
  const port = await freePort();
  const dir = mkdtempSync(join(WORK_DIR, 'nginx-'));
  const servers = engines.map((u) => `    server ${new URL(u).host};`).join('\n');
  const conf = `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream engines {
${servers}
    keepalive 256;
  }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://engines;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const url = `http://127.0.0.1:${port}`;
  const answers = async () => {
    try {
      await (await fetch(`${url}/health`)).arrayBuffer();
      return url;
    } catch {
      return undefined;
    }
  };
  return spawnServer(
    'nginx',
    'nginx',
    ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')],
    answers,
    cpu,
  );
}
