/**
 * Linux `perf` samples of a proxy process, compared between two proxies under the same load: where
 * the CPU goes, native code and the kernel included. V8's own profiler (cpu-profile.ts) sees only
 * JavaScript and its builtins, and at one sample per 200 µs it doubles the CPU a request takes; perf
 * samples the process from outside (cpu-clock, 4,999 per second, every thread), and costs little.
 *
 * A Node process started with `PERF_NODE_FLAGS` writes the names of its JIT-compiled functions to
 * /tmp/perf-<pid>.map, which perf reads to name them (`file:line:column` of the function's start;
 * what V8 inlined into a function counts as its own). `perfRecord(pid, file)` samples a running
 * process until `stop()`; `perfTables` compares two recordings per request: by kind of code, then
 * the symbols whose time differs most.
 */
import { execFileSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { hasCommand } from './support.ts';

export const PERF_NODE_FLAGS = ['--perf-basic-prof-only-functions'];
/** The same for a Deno process (its V8 takes the flag through `--v8-flags`). */
export const PERF_DENO_FLAGS = ['--v8-flags=--perf-basic-prof-only-functions'];

export const hasPerf = () => hasCommand('perf');

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Samples process `pid` (all its threads) into `file` until `stop()`; with `calls`, call graphs too. */
export async function perfRecord(
  pid: number,
  file: string,
  calls = false,
): Promise<{ stop(): Promise<void> }> {
  const args = ['record', '-q', ...(calls ? ['-g'] : []), '-e', 'cpu-clock', '-F', '4999'];
  args.push('-p', String(pid), '-o', file);
  const child = spawn('perf', args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await pause(300); // perf attaches to every thread before the load starts
  return {
    stop: async () => {
      child.kill('SIGINT');
      await exited;
    },
  };
}

/** Removes the symbol map a Node process started with PERF_NODE_FLAGS left behind. */
export function removePerfMap(pid: number): void {
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
}

interface Recording {
  /** Total sampled CPU time (ns). */
  total: number;
  /** Sampled ns per symbol, and per kind of code. */
  symbols: Map<string, number>;
  kinds: Map<string, number>;
}

/** What kind of code a sample was in: the proxy's own JavaScript, undici, Node, V8, the kernel. */
function kindOf(dso: string, level: string, symbol: string): string {
  if (level === 'k') return 'kernel (system calls, network stack, page faults)';
  if (/\/dist\/.*\/main\.js:|\/src\/(core|adapters)\//.test(symbol)) return "the router's JavaScript";
  if (/floor-proxy/.test(symbol)) return "the floor's JavaScript";
  if (/undici/.test(symbol)) return 'undici (JavaScript)';
  if (/\bext:/.test(symbol)) return "Deno's JavaScript (serve, fetch, streams)";
  if (dso.startsWith('[JIT]'))
    return /node:|:\d+:\d+$/.test(symbol)
      ? "Node's JavaScript (http, streams, events)"
      : 'other compiled code';
  if (symbol.startsWith('Builtins_')) return 'V8 builtins (property access, calls, promises, strings)';
  if (/Heap|Scaveng|GC|Mark|Sweep|Evacuat|Page|Space|Concurrent|Remembered|Slot/.test(symbol))
    return 'V8 garbage collector and heap';
  if (symbol.startsWith('v8::')) return 'V8 runtime (other)';
  if (/^node::|^uv_|^uv__|^llhttp/.test(symbol)) return "Node's C++ and libuv";
  if (dso.startsWith('libc')) return 'libc (memory copies, allocation)';
  return `other (${dso})`;
}

/** `perf report` of a recording as text, and the sampled CPU time it covers (ns). */
function report(file: string, options: string[]): { out: string; total: number } {
  const out = execFileSync('perf', ['report', '-i', file, '--stdio', ...options], {
    maxBuffer: 1 << 28,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();
  return { out, total: Number(/Event count \(approx\.\): (\d+)/.exec(out)?.[1] ?? Number.NaN) };
}

/** A symbol as the tables name it: without V8's tier mark, its file without directories. */
const symbolName = (raw: string) =>
  raw.replace(/^(JS|LazyCompile):[*~^+]?/, '').replace(/(file:\/\/)?\/\S*\/(?=[^/\s]+:\d+)/, '');

function read(file: string): Recording {
  const { out, total } = report(file, ['--no-children', '--sort', 'dso,sym']);
  const symbols = new Map<string, number>();
  const kinds = new Map<string, number>();
  for (const line of out.split('\n')) {
    // `  12.34%  node  [.] Builtins_LoadIC` or `  0.88%  [JIT] tid 123  [.] JS:*log file:///…/main.js:1:2`
    const m = /^\s+([\d.]+)%\s+(\[JIT\] tid \d+|\S+)\s+\[(.)\]\s+(.*?)\s*$/.exec(line);
    if (!m) continue;
    const [, percent, dso, level, raw] = m as unknown as [string, string, string, string, string];
    const ns = (Number(percent) / 100) * total;
    const kind = kindOf(dso, level, raw);
    kinds.set(kind, (kinds.get(kind) ?? 0) + ns);
    const symbol = symbolName(raw);
    symbols.set(symbol, (symbols.get(symbol) ?? 0) + ns);
  }
  return { total, symbols, kinds };
}

const us = (ns: number, requests: number) => (ns / 1000 / requests).toFixed(2);

function diffRows(a: Map<string, number>, b: Map<string, number>, ra: number, rb: number, top: number) {
  const per = (m: Map<string, number>, k: string, r: number) => (m.get(k) ?? 0) / r;
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  const diff = (k: string) => per(a, k, ra) - per(b, k, rb);
  keys.sort((x, y) => Math.abs(diff(y)) - Math.abs(diff(x)));
  return keys.slice(0, top).map((k) => {
    const cells = [us(a.get(k) ?? 0, ra), us(b.get(k) ?? 0, rb), (diff(k) / 1000).toFixed(2)];
    return `| \`${k.replaceAll('|', '\\|')}\` | ${cells.join(' | ')} |`;
  });
}

/**
 * Two recordings compared per request (µs): first by kind of code, then the `top` symbols whose
 * time differs most. `requests`: how many each one served while it was recorded.
 */
export function perfTables(
  files: [string, string],
  names: [string, string],
  requests: [number, number],
  top = 30,
): string {
  const [a, b] = files.map(read) as [Recording, Recording];
  const [ra, rb] = requests;
  const head = `${names[0]} µs/request | ${names[1]} µs/request | difference |`;
  return [
    `| kind of code | ${head}`,
    '|---|---:|---:|---:|',
    `| all samples | ${us(a.total, ra)} | ${us(b.total, rb)} | ${((a.total / ra - b.total / rb) / 1000).toFixed(2)} |`,
    ...diffRows(a.kinds, b.kinds, ra, rb, a.kinds.size + b.kinds.size),
    '',
    `| symbol | ${head}`,
    '|---|---:|---:|---:|',
    ...diffRows(a.symbols, b.symbols, ra, rb, top),
  ].join('\n');
}

/**
 * From a recording with call graphs: the `top` symbols of the proxy's own JavaScript (`own` tells
 * them by name) by the time spent in them and everything they called, per request.
 */
export function inclusiveTable(file: string, name: string, requests: number, own: RegExp, top = 25): string {
  const { out, total } = report(file, ['--children', '--sort', 'sym', '-g', 'none']);
  const rows: string[] = [];
  for (const line of out.split('\n')) {
    const m = /^\s+([\d.]+)%\s+([\d.]+)%\s+\[.\]\s+(.*?)\s*$/.exec(line);
    if (!m || !own.test(m[3] as string)) continue;
    const [children, self] = [Number(m[1]), Number(m[2])].map((p) => us((p / 100) * total, requests));
    rows.push(`| \`${symbolName(m[3] as string)}\` | ${children} | ${self} |`);
    if (rows.length === top) break;
  }
  return [
    `| ${name}: function | with what it called, µs/request | itself |`,
    '|---|---:|---:|',
    ...rows,
  ].join('\n');
}
