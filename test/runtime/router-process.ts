/**
 * Starts a router entry point as a real process (its own process group), waits for its
 * "listening on http://..." line (and, unless told otherwise, for /readiness to answer 200: the
 * router listens before its workers are healthy), and stops it by its handle. `builtEntry()` is the
 * bundled Node command (dist/node/main.js, what `npm start`, the bin and the container run), rebuilt
 * first when a source file is newer than it.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The repository root: router processes run from here, like `npm start` and `deno task start`. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** dist/node/main.js, relative to REPO_ROOT. */
export const DIST_MAIN = 'dist/node/main.js';

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function mtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * The path of dist/node/main.js, bundled again (as scripts/build.mjs does) when src/ or
 * package.json changed since. The bundle is written aside and renamed into place, so test files
 * building at the same time never run a half-written file.
 */
export async function builtEntry(): Promise<string> {
  const target = join(REPO_ROOT, DIST_MAIN);
  const sources = Math.max(newestSource(join(REPO_ROOT, 'src')), mtime(join(REPO_ROOT, 'package.json')));
  if (mtime(target) >= sources) return target;
  mkdirSync(join(REPO_ROOT, 'dist/node'), { recursive: true });
  const outdir = mkdtempSync(join(REPO_ROOT, 'dist', '.build-'));
  try {
    await build({
      entryPoints: { main: join(REPO_ROOT, 'src/adapters/node/main.ts') },
      outdir,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      sourcemap: true,
      logLevel: 'warning',
    });
    renameSync(join(outdir, 'main.js.map'), `${target}.map`);
    renameSync(join(outdir, 'main.js'), target);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  return target;
}

export interface RouterProcess {
  url: string;
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves with the exit code (null when killed by a signal) once its output is all read. */
  exited: Promise<number | null>;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, then SIGKILL to the whole group if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** How long to wait for the listening line (default 15 s). */
  timeoutMs?: number;
  /** Also wait until /readiness answers 200 (default true). */
  ready?: boolean;
}

function run(command: string, args: string[], options: SpawnOptions) {
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  // 'close', not 'exit': 'exit' can come before the last output is read from the pipes, and a test
  // that reads a process's last line (its startup error) would then find it missing.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

/** Runs a command to completion (CLI modes such as --check-config). */
export async function runToExit(
  command: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<{ code: number | null; output: string }> {
  const proc = run(command, args, options);
  const code = await proc.exited;
  return { code, output: proc.output() };
}

export async function spawnRouter(
  command: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<RouterProcess> {
  const proc = run(command, args, options);
  const { child, exited, output } = proc;
  const stop = async (graceMs = 5000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
    }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  const url = await new Promise<string>((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 15_000;
    const timer = setTimeout(() => {
      void stop(0);
      reject(new Error(`no "listening on" line after ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    const onData = () => {
      const m = /listening on (http:\/\/[\d.:]+)/.exec(output());
      if (!m) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      resolve(m[1] as string);
    };
    child.stdout.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`router exited early (code ${code}):\n${output()}`));
    });
  });
  if (options.ready ?? true) await waitReady(url, options.timeoutMs ?? 15_000, output);
  return { url, child, exited, output, stop };
}

/** Polls /readiness until it answers 200 (the router probes its workers after it listens). */
async function waitReady(url: string, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${url}/readiness`);
    await res.arrayBuffer();
    if (res.status === 200) return;
    if (performance.now() > deadline) throw new Error(`not ready after ${timeoutMs} ms:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A small non-streaming chat completion for the simulated engine's model, sent to a router. */
export function chatRequest(url: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
}
