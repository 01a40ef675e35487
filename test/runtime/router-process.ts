/**
 * Starts a router entry point as a real process (its own process group), waits for its
 * "listening on http://..." line, and stops it by its handle.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** The repository root: router processes run from here, like `npm start` and `deno task start`. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface RouterProcess {
  url: string;
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves with the exit code (null when killed by a signal). */
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
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
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
  return { url, child, exited, output, stop };
}
