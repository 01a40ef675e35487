/**
 * V8's garbage-collection trace in a proxy's log (overhead-procs.ts writes each server's output to
 * WORK_DIR/<name>.log): start the proxy with GC_FLAGS, note `logLength` before the measured load,
 * then read what the collector did since. Node's V8 prints `--trace-gc-nvp` as `key=value` pairs,
 * Deno's (a newer V8) as JSON after `GC: `.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WORK_DIR } from './overhead-procs.ts';

export const GC_FLAGS = ['--trace-gc-nvp'];

export interface Collections {
  count: number;
  /** Mean pause of the main thread, ms. */
  pauseMs: number;
  /** Mean bytes promoted to the old generation per collection, KB (young collections). */
  promotedKB: number;
}

/** The log's length now: pass it to `scavenges`/`fullCollections` to read only what follows. */
export const logLength = (name: string) => readFileSync(join(WORK_DIR, `${name}.log`), 'utf8').length;

/** Collections of one kind (`s`: young, `ms`/`mc`: full) in a proxy's log since `from`. */
function collections(name: string, from: number, kinds: readonly string[]): Collections {
  const log = readFileSync(join(WORK_DIR, `${name}.log`), 'utf8').slice(from);
  const records: { pause: number; promoted: number }[] = [];
  for (const line of log.split('\n')) {
    const nvp = / gc=([a-z]+) /.exec(line);
    // By pattern, not JSON.parse: another line written at the same time may cut into Deno's.
    const json = /"gc":"([a-z]+)"/.exec(line);
    const kind = nvp?.[1] ?? json?.[1];
    if (kind === undefined || !kinds.includes(kind)) continue;
    const field = nvp
      ? (key: string) => Number(new RegExp(` ${key}=([0-9.]+)`).exec(line)?.[1] ?? 0)
      : (key: string) => Number(new RegExp(`"${key}":([0-9.]+)`).exec(line)?.[1] ?? Number.NaN);
    const record = { pause: field('pause'), promoted: field('promoted') };
    if (Number.isFinite(record.pause) && Number.isFinite(record.promoted)) records.push(record);
  }
  const mean = (key: 'pause' | 'promoted') =>
    records.reduce((a, r) => a + r[key], 0) / Math.max(1, records.length);
  return { count: records.length, pauseMs: mean('pause'), promotedKB: mean('promoted') / 1024 };
}

/** Young-generation collections (scavenges) in a proxy's log since `from`. */
export const scavenges = (name: string, from: number) => collections(name, from, ['s']);

/** Full (mark-sweep-compact) collections in a proxy's log since `from`. */
export const fullCollections = (name: string, from: number) => collections(name, from, ['ms', 'mc']);
