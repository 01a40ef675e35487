/**
 * The prefix tree at its bound, in process: what a full garbage collection costs with it in the
 * heap, and what an insert costs once every insert evicts.
 *   npm run bench:tree-gc            # MAX_TREE_BYTES=67108864 (the default --max-tree-bytes)
 * (runs `node --expose-gc`). Feeds one tree the chats `npm run bench:policy-http` sends (8 system
 * prompts of about SIZE characters, every user turn new), each parsed and its routing text
 * extracted as the router does, until the memory estimate reaches the bound; then times five
 * forced full collections and 100,000 more inserts, each followed by the eviction the policy runs.
 */
import { RadixTree } from '../src/core/policies/radix-tree.ts';
import { extractRoutingInput } from '../src/core/routing/routing-input.ts';
import { chatBodies } from './prompt-words.ts';

const MAX = Number(process.env.MAX_TREE_BYTES ?? 64 * 2 ** 20);
const SIZE = Number(process.env.SIZE ?? 8192);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:tree-gc)');

const next = chatBodies(SIZE, { systemPrompts: 8, turns: 0, seed: 1 });
const needs = { text: true, routingKey: false, sessionId: false };
const noHeader = () => undefined;
const insert = (tree: RadixTree, i: number): void => {
  const body = JSON.parse(next()) as Record<string, unknown>;
  const input = extractRoutingInput(body, '/v1/chat/completions', noHeader, needs, undefined, 4096);
  if (input.text !== undefined)
    tree.insert(input.text, i % 2 ? 'http://10.0.0.1:8000' : 'http://10.0.0.2:8000');
};

const tree = new RadixTree();
let prompts = 0;
const fillStart = performance.now();
while (tree.bytes < MAX) insert(tree, prompts++);
const fillMs = performance.now() - fillStart;
gc();
gc();
const pauses: number[] = [];
for (let i = 0; i < 5; i++) {
  const start = performance.now();
  gc();
  pauses.push(performance.now() - start);
}
const memory = process.memoryUsage();
const STEADY = 100_000;
const steadyStart = performance.now();
for (let i = 0; i < STEADY; i++) {
  insert(tree, i);
  tree.evict(Number.POSITIVE_INFINITY, MAX);
}
const steadyUs = ((performance.now() - steadyStart) / STEADY) * 1000;
const mib = (n: number) => (n / 2 ** 20).toFixed(1);
pauses.sort((a, b) => a - b);
console.log(`node ${process.version}; bound ${mib(MAX)} MiB; ${SIZE}-character chats, every user turn new\n`);
console.log(
  '| prompts held | nodes | heap used (MiB) | array buffers (MiB) | full GC ms (min / median / max of 5) | µs per request filling | µs per request at the bound |',
);
console.log('|---:|---:|---:|---:|---|---:|---:|');
console.log(
  `| ${prompts} | ${tree.stats().nodes} | ${mib(memory.heapUsed)} | ${mib(memory.arrayBuffers)} | ` +
    `${pauses[0]?.toFixed(1)} / ${pauses[2]?.toFixed(1)} / ${pauses[4]?.toFixed(1)} | ${((fillMs / prompts) * 1000).toFixed(1)} | ${steadyUs.toFixed(1)} |`,
);
console.log('\n(µs per request: JSON.parse of the body, routing-text extraction, insert and eviction.)');
