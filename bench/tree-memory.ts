/**
 * Measures what the cache_aware prefix tree really costs on this V8 and checks the estimate that
 * bounds it (src/core/policies/tree-memory.ts):
 *   npm run bench:tree-memory            # PROMPTS=100000 per workload
 * (runs `node --expose-gc`). For each workload: heapUsed after a full GC, before and after inserting
 * PROMPTS prompts into one tree kept alive; the tree's structure counts; the measured heap per prompt
 * and the estimate's ratio to it. Then a least-squares fit of the per-structure constants
 * (node, tenant entry, children map) over all workloads, the numbers to put in tree-memory.ts.
 */
import { RadixTree, type TreeStats } from '../src/core/policies/radix-tree.ts';
import { CHILD_MAP_BYTES, NODE_BYTES, TENANT_BYTES } from '../src/core/policies/tree-memory.ts';

const PROMPTS = Number(process.env.PROMPTS ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:tree-memory)');

let seed = 42;
const rand = () => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 4294967296;
};
const word = (n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz') =>
  Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
const SYSTEM = `system: You are a helpful assistant. ${'Answer briefly and cite sources. '.repeat(18)}\n`;
const CJK_SYSTEM = `system: ${'你是一个乐于助人的助手，请简要回答。'.repeat(30)}\n`;

interface Workload {
  name: string;
  tenants: number;
  text: (i: number) => string;
}

const WORKLOADS: Workload[] = [
  {
    name: 'shared system prompt + distinct user turn',
    tenants: 1,
    text: (i) => `${SYSTEM}user: question ${i}: ${word(24)}\n`,
  },
  { name: 'same, on 2 workers each', tenants: 2, text: (i) => `${SYSTEM}user: question ${i}: ${word(24)}\n` },
  { name: 'random 200-character prompts', tenants: 1, text: () => word(200, 'abcdefghijklmnop') },
  { name: 'distinct 2 kB prompts', tenants: 1, text: (i) => `${i} ${word(2000)}` },
  { name: 'multi-turn chats (8 turns each)', tenants: 1, text: (i) => chatTurns(i) },
  {
    name: 'CJK system prompt + distinct turn',
    tenants: 1,
    text: (i) => `${CJK_SYSTEM}user: 问题 ${i}: ${word(24)}\n`,
  },
];

const chats: string[] = [];
function chatTurns(i: number): string {
  const conv = Math.floor(i / 8);
  const prev = i % 8 === 0 ? `system: conversation ${conv} ${word(300)}\n` : (chats[conv % 64] as string);
  const next = `${prev}user: ${word(40)}\nassistant: ${word(120)}\n`;
  chats[conv % 64] = next;
  return next;
}

interface Row {
  name: string;
  stats: TreeStats;
  measured: number;
  labels: number;
}

function measure(w: Workload): Row {
  chats.length = 0;
  gc?.();
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const tree = new RadixTree();
  for (let i = 0; i < PROMPTS; i++) {
    const text = w.text(i);
    for (let t = 0; t < w.tenants; t++) tree.insert(text, `http://10.0.0.${t}:8000`);
  }
  chats.length = 0;
  gc?.();
  gc?.();
  const measured = process.memoryUsage().heapUsed - before;
  const stats = tree.stats();
  if (stats.bytes !== tree.bytes) throw new Error(`running estimate ${tree.bytes} != recount ${stats.bytes}`);
  const fixed =
    NODE_BYTES * stats.nodes + TENANT_BYTES * stats.tenantEntries + CHILD_MAP_BYTES * stats.innerNodes;
  return { name: w.name, stats, measured, labels: stats.bytes - fixed };
}

/** Least squares for measured - labels = node·nodes + tenant·entries + map·innerNodes. */
function leastSquares(rows: Row[]): [number, number, number] {
  const a = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  const b = [0, 0, 0];
  for (const r of rows) {
    const x = [r.stats.nodes, r.stats.tenantEntries, r.stats.innerNodes];
    const y = r.measured - r.labels;
    for (let i = 0; i < 3; i++) {
      b[i] = (b[i] as number) + (x[i] as number) * y;
      for (let j = 0; j < 3; j++)
        (a[i] as number[])[j] = ((a[i] as number[])[j] as number) + (x[i] as number) * (x[j] as number);
    }
  }
  return solve3(a, b);
}

function solve3(a: number[][], b: number[]): [number, number, number] {
  const m = a.map((row, i) => [...row, b[i] as number]);
  for (let c = 0; c < 3; c++) {
    const p = m[c] as number[];
    for (let r = 0; r < 3; r++) {
      if (r === c) continue;
      const row = m[r] as number[];
      const f = (row[c] as number) / (p[c] as number);
      for (let k = c; k < 4; k++) row[k] = (row[k] as number) - f * (p[k] as number);
    }
  }
  return [0, 1, 2].map((i) => ((m[i] as number[])[3] as number) / ((m[i] as number[])[i] as number)) as [
    number,
    number,
    number,
  ];
}

const rows = WORKLOADS.map(measure);
const fmt = (n: number) => n.toFixed(0);
console.log(
  `node ${process.version}, ${PROMPTS} prompts per workload; constants: node ${NODE_BYTES}, tenant ${TENANT_BYTES}, children map ${CHILD_MAP_BYTES}`,
);
console.log(
  '| workload | nodes | inner | tenant entries | chars | heap measured (MiB) | B/prompt measured | B/prompt estimated | estimate / measured |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const { stats: s } = r;
  console.log(
    `| ${r.name} | ${s.nodes} | ${s.innerNodes} | ${s.tenantEntries} | ${s.chars} | ${(r.measured / 2 ** 20).toFixed(1)} | ${fmt(r.measured / PROMPTS)} | ${fmt(s.bytes / PROMPTS)} | ${(s.bytes / r.measured).toFixed(3)} |`,
  );
}
const [node, tenant, map] = leastSquares(rows);
console.log(
  `least-squares fit: NODE_BYTES ≈ ${fmt(node)}, TENANT_BYTES ≈ ${fmt(tenant)}, CHILD_MAP_BYTES ≈ ${fmt(map)}`,
);
