/**
 * A callgrind run's instructions split by the kind of code that ran them, from the symbols
 * `callgrind_annotate` gives each function (self cost):
 * - compiler: V8's optimizing compilers at work (its `compiler::` and `maglev::` namespaces);
 * - collector: the garbage collector (scavenges, marking, sweeping, evacuation, the heap's upkeep);
 * - jit: code V8 generated at run time (no symbol: the request's JavaScript once compiled, its
 *   inline caches' stubs);
 * - rest: everything else (V8's builtins and runtime, the JSON parser, Node, libuv, libc).
 * V8 optimizes code by how often it runs, so thousands of requests into a run its optimizing
 * compiler is still busy: per request it can weigh more than the request itself. Setting it apart
 * comes closer to the work a request does once the process is warm.
 */
import { execFileSync } from 'node:child_process';

export const KINDS = ['compiler', 'collector', 'jit', 'rest'] as const;
export type Kind = (typeof KINDS)[number];

const COMPILER = /v8::internal::(compiler|maglev|turboshaft)::/i;
const COLLECTOR =
  /Scaveng|MarkCompact|v8::internal::Heap::|Sweeper|Evacuat|ConcurrentMarking|MarkingVisitor|MemoryAllocator|PagedSpace|IncrementalMarking|GCTracer|IterateObjectCache|RootVisitor|heap::base::|cppgc::/;
/** A line of `callgrind_annotate --show=Ir`: the count, a percentage, then file:function. */
const LINE = /^\s*([\d,]+)\s+\([^)]*\)\s+(.+)$/;

export function kindOf(symbol: string): Kind {
  if (COMPILER.test(symbol)) return 'compiler';
  if (COLLECTOR.test(symbol)) return 'collector';
  if (/^\?\?\?:0x[0-9a-f]+/.test(symbol)) return 'jit';
  return 'rest';
}

/** Instructions per kind of code in a callgrind output file (every function, self cost). */
export function instructionsByKind(file: string): Record<Kind, number> {
  const text = execFileSync(
    'callgrind_annotate',
    ['--inclusive=no', '--threshold=100', '--show=Ir', '--auto=no', file],
    { encoding: 'utf8', maxBuffer: 512 << 20 },
  );
  const out: Record<Kind, number> = { compiler: 0, collector: 0, jit: 0, rest: 0 };
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m || (m[2] as string).startsWith('PROGRAM TOTALS')) continue;
    out[kindOf(m[2] as string)] += Number((m[1] as string).replaceAll(',', ''));
  }
  return out;
}
