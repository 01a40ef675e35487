/**
 * Measures what the cache_aware prefix tree really costs on this V8 and checks the estimate that
 * bounds it (src/core/policies/tree-memory.ts):
 *   npm run bench:tree-memory            # PROMPTS=100000 per workload
 * (runs `node --expose-gc`). For each workload: heapUsed + arrayBuffers (the tree's rows are typed
 * arrays, whose contents live outside the JS heap) after a full GC, before and after inserting
 * PROMPTS prompts into one tree kept alive; the tree's structure counts; the measured memory per
 * prompt and the estimate's ratio to it. Then a least-squares fit of the per-node constant over all
 * workloads (labels charged as labelBytes), the number to put in tree-memory.ts.
 */
import { RadixTree, type TreeStats } from '../src/core/policies/radix-tree.ts';
import { NODE_BYTES, nodeBytes, TENANT_WORD_BYTES } from '../src/core/policies/tree-memory.ts';

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

async function measure(w: Workload): Promise<Row> {
  chats.length = 0;
  await settle();
  const before = used();
  const tree = new RadixTree();
  for (let i = 0; i < PROMPTS; i++) {
    const text = w.text(i);
    for (let t = 0; t < w.tenants; t++) tree.insert(text, `http://10.0.0.${t}:8000`);
  }
  chats.length = 0;
  await settle();
  const measured = used() - before;
  const stats = tree.stats();
  if (stats.bytes !== tree.bytes) throw new Error(`running estimate ${tree.bytes} != recount ${stats.bytes}`);
  const fixed = nodeBytes(1) * stats.nodes;
  return { name: w.name, stats, measured, labels: stats.bytes - fixed };
}

/**
 * Full GCs, with pauses between them: a dead typed array's buffer is freed after the collection
 * that found it dead, by a sweeper running alongside, so one GC alone leaves it counted.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 20));
  }
}

function used(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Least squares for measured - labels = perNode·nodes (one constant: a node's row, edge and tenant word). */
function leastSquares(rows: Row[]): number {
  let xy = 0;
  let xx = 0;
  for (const r of rows) {
    xy += r.stats.nodes * (r.measured - r.labels);
    xx += r.stats.nodes * r.stats.nodes;
  }
  return xy / xx;
}

const rows: Row[] = [];
for (const w of WORKLOADS) rows.push(await measure(w));
const fmt = (n: number) => n.toFixed(0);
console.log(
  `node ${process.version}, ${PROMPTS} prompts per workload; constants: node ${NODE_BYTES}, tenant word ${TENANT_WORD_BYTES}`,
);
console.log(
  '| workload | nodes | inner | tenant entries | chars | heap + buffers measured (MiB) | B/prompt measured | B/prompt estimated | estimate / measured |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const { stats: s } = r;
  console.log(
    `| ${r.name} | ${s.nodes} | ${s.innerNodes} | ${s.tenantEntries} | ${s.chars} | ${(r.measured / 2 ** 20).toFixed(1)} | ${fmt(r.measured / PROMPTS)} | ${fmt(s.bytes / PROMPTS)} | ${(s.bytes / r.measured).toFixed(3)} |`,
  );
}
const perNode = leastSquares(rows);
console.log(
  `least-squares fit: NODE_BYTES + TENANT_WORD_BYTES ≈ ${fmt(perNode)} (now ${nodeBytes(1)}); per workload: ${rows.map((r) => fmt((r.measured - r.labels) / r.stats.nodes)).join(', ')}`,
);
