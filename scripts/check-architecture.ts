/**
 * Architecture check for src/: `npx tsx scripts/check-architecture.ts` (or `npm run check:architecture`).
 *
 * Fails (exit 1, one line per offence) on
 *  - layer:        a src/core file importing a core folder of a higher rank, or of the same rank but
 *                  another folder (see RANKS; a folder may always import itself);
 *  - cycle:        any file-level import cycle in src/, type-only imports included;
 *  - core-escape:  a src/core file importing anything outside src/core (src/adapters, src/sim, …);
 *  - file-length:  a file in src/ over MAX_LINES lines;
 *  - unranked:     a src/core folder missing from RANKS (rank it before adding files);
 *  - unresolved:   a relative import naming no file in src/ (the checker would be blind to it).
 *
 * The analysis is a pure function of the files' paths and texts (`analyze`), so the unit test can
 * feed it fake trees; only `readSourceTree` and `main` touch the file system.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ImportRef, scanImports } from './import-scanner.ts';

/** Layers of src/core, bottom to top. `.` is the files directly in src/core (router.ts, cli.ts). */
export const RANKS: Readonly<Record<string, number>> = {
  config: 0,
  contracts: 1,
  observability: 2,
  upstream: 2,
  resilience: 3,
  policies: 4,
  fleet: 5,
  routing: 6,
  http: 7,
  '.': 8,
};

export const MAX_LINES = 300;

export interface SourceFile {
  /** Repository-relative POSIX path, e.g. `src/core/http/app.ts`. */
  path: string;
  text: string;
}

export type OffenceKind = 'layer' | 'cycle' | 'core-escape' | 'file-length' | 'unranked' | 'unresolved';

export interface Offence {
  kind: OffenceKind;
  file: string;
  /** 1-based line of the offending import, when there is one. */
  line?: number;
  message: string;
}

export interface Edge {
  from: string;
  to: string;
  line: number;
  ref: ImportRef;
}

const CORE = 'src/core/';

/** The core folder of a path (`.` for src/core/*.ts), or null outside src/core. */
export function coreFolder(path: string): string | null {
  if (!path.startsWith(CORE)) return null;
  const rest = path.slice(CORE.length);
  const slash = rest.indexOf('/');
  return slash === -1 ? '.' : rest.slice(0, slash);
}

/** Resolves a relative specifier against `from` to a known file (`.ts` implied, `.js` → `.ts`). */
export function resolveSpecifier(from: string, specifier: string, known: ReadonlySet<string>): string | null {
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  const candidates = [base, `${base}.ts`, `${base}/index.ts`];
  if (base.endsWith('.js')) candidates.unshift(`${base.slice(0, -3)}.ts`);
  return candidates.find((c) => known.has(c)) ?? (base.startsWith('src/') ? null : base);
}

const isRelative = (specifier: string): boolean => specifier.startsWith('./') || specifier.startsWith('../');

/** Counts lines as an editor does: a final line break does not start another line. */
export function countLines(text: string): number {
  if (text === '') return 0;
  const breaks = text.split('\n').length - 1;
  return text.endsWith('\n') ? breaks : breaks + 1;
}

function layerOffence(edge: Edge): Offence | null {
  const fromFolder = coreFolder(edge.from);
  const toFolder = coreFolder(edge.to);
  if (fromFolder === null || toFolder === null || fromFolder === toFolder) return null;
  const fromRank = RANKS[fromFolder];
  const toRank = RANKS[toFolder];
  if (fromRank === undefined || toRank === undefined || toRank < fromRank) return null;
  const direction = toRank === fromRank ? 'sideways' : 'upward';
  return {
    kind: 'layer',
    file: edge.from,
    line: edge.line,
    message:
      `${direction} import of ${edge.to}: ${fromFolder} (rank ${fromRank}) may import only its own folder ` +
      `or a lower rank, not ${toFolder} (rank ${toRank})`,
  };
}

function escapeOffence(edge: Edge): Offence | null {
  if (!edge.from.startsWith(CORE) || edge.to.startsWith(CORE)) return null;
  return {
    kind: 'core-escape',
    file: edge.from,
    line: edge.line,
    message: `src/core may not import ${edge.to} (src/core stays runtime-agnostic: adapters and the sim depend on it, never the reverse)`,
  };
}

/** Strongly connected components (Tarjan), each sorted, components in discovery order. */
function components(nodes: readonly string[], next: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    out.push(component.sort());
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out;
}

/** A shortest cycle through `start` inside `members` (breadth-first), as a closed path. */
function cycleThrough(
  start: string,
  members: ReadonlySet<string>,
  next: ReadonlyMap<string, readonly string[]>,
) {
  const parent = new Map<string, string>();
  const queue = [start];
  for (let k = 0; k < queue.length; k++) {
    const v = queue[k] as string;
    for (const w of next.get(v) ?? []) {
      if (w === start) {
        const path = [start];
        for (let u: string | undefined = v; u !== undefined && u !== start; u = parent.get(u))
          path.splice(1, 0, u);
        return [...path, start];
      }
      if (members.has(w) && !parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

function cycleOffences(files: readonly string[], edges: readonly Edge[]): Offence[] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    const list = next.get(e.from) ?? [];
    if (!list.includes(e.to)) list.push(e.to);
    next.set(e.from, list);
  }
  for (const list of next.values()) list.sort();
  const offences: Offence[] = [];
  for (const component of components(files, next)) {
    const first = component[0] as string;
    if (component.length === 1 && !(next.get(first) ?? []).includes(first)) continue;
    const path = cycleThrough(first, new Set(component), next);
    const line = edges.find((e) => e.from === path[0] && e.to === path[1])?.line;
    const extra =
      component.length > path.length - 1 ? ` (${component.length} files are mutually reachable)` : '';
    offences.push({ kind: 'cycle', file: first, line, message: `import cycle: ${path.join(' → ')}${extra}` });
  }
  return offences;
}

/** The import edges between files of `files` plus the offences found while resolving them. */
export function collectEdges(files: readonly SourceFile[]): { edges: Edge[]; offences: Offence[] } {
  const known = new Set(files.map((f) => f.path));
  const edges: Edge[] = [];
  const offences: Offence[] = [];
  for (const file of files) {
    for (const ref of scanImports(file.text)) {
      if (!isRelative(ref.specifier)) continue;
      const to = resolveSpecifier(file.path, ref.specifier, known);
      if (to === null) {
        const message = `import '${ref.specifier}' names no file in src/`;
        offences.push({ kind: 'unresolved', file: file.path, line: ref.line, message });
      } else edges.push({ from: file.path, to, line: ref.line, ref });
    }
  }
  return { edges, offences };
}

/** Every offence of the tree `files` (paths under src/), sorted by file and line. */
export function analyze(files: readonly SourceFile[], options: { maxLines?: number } = {}): Offence[] {
  const maxLines = options.maxLines ?? MAX_LINES;
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const { edges, offences } = collectEdges(sorted);
  for (const file of sorted) {
    const folder = coreFolder(file.path);
    if (folder !== null && RANKS[folder] === undefined) {
      const message = `src/core/${folder}/ has no rank: add it to RANKS in scripts/check-architecture.ts`;
      offences.push({ kind: 'unranked', file: file.path, message });
    }
    const lines = countLines(file.text);
    if (lines > maxLines) {
      const message = `${lines} lines (max ${maxLines}): split the file`;
      offences.push({ kind: 'file-length', file: file.path, message });
    }
  }
  const inTree = edges.filter((e) => e.to.startsWith('src/'));
  for (const edge of edges) {
    const offence = layerOffence(edge) ?? escapeOffence(edge);
    if (offence) offences.push(offence);
  }
  offences.push(
    ...cycleOffences(
      sorted.map((f) => f.path),
      inTree,
    ),
  );
  return offences.sort((a, b) =>
    a.file === b.file ? (a.line ?? 0) - (b.line ?? 0) : a.file < b.file ? -1 : 1,
  );
}

export function formatOffence(o: Offence): string {
  return `${o.file}${o.line === undefined ? '' : `:${o.line}`}  [${o.kind}] ${o.message}`;
}

/** Every .ts file under `dir` (relative to `root`), with repository-relative POSIX paths. */
export function readSourceTree(root: string, dir = 'src'): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (abs: string): void => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const child = join(abs, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && entry.name.endsWith('.ts')) {
        const path = relative(root, child).split(sep).join('/');
        out.push({ path, text: readFileSync(child, 'utf8') });
      }
    }
  };
  walk(join(root, dir));
  return out;
}

function main(): void {
  const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
  const files = readSourceTree(root);
  const offences = analyze(files);
  for (const o of offences) console.error(formatOffence(o));
  if (offences.length > 0) {
    console.error(`\ncheck-architecture: ${offences.length} offence(s) in ${files.length} files under src/`);
    process.exitCode = 1;
  } else console.log(`check-architecture: ${files.length} files under src/, no offences`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
