/**
 * What the routing decision costs, in process (no HTTP, no engines):
 *   npm run bench:policy          # REPEATS=3 SIZES=512,8192,65536 TREE_SIZES=1000,10000,100000 PART=1,2,3 COLD_KB=0
 * It runs bundled as the router ships (tsx would keep every function's name with a call per closure
 * created, about 1 µs of cache_aware's decision that the router does not pay).
 *
 * Part 1, per prompt size: chat bodies sharing one system prompt, each with a distinct user turn,
 * go through what the router does with a parsed body: routing-text extraction (routing-input.ts,
 * only when the policy reads text, as the router does), `fleet.route` and `fleet.settle` (32
 * requests in flight), with `cache_aware` and with `round_robin`. JSON.parse of the same bodies is
 * timed alongside as a yardstick (every policy pays it). µs per request: median of REPEATS runs
 * (min-max in brackets), the two policies alternating within each repeat.
 * COLD_KB=2048: before each request's extraction and before its route, write one word per cache
 * line of a COLD_KB buffer (untimed), so the decision meets the tree in cold caches, as it does in
 * the router, where a request's HTTP and JSON work runs between two decisions. Each step is then
 * timed per request.
 *
 * Part 2: the prefix tree alone (RadixTree), filled with 1k, 10k, 100k prompts (one of 32 system
 * prompts + a distinct user turn, on one of 4 workers), within --max-tree-bytes (128 MiB here); then per
 * operation: insert of a new prompt (with the bound check cache_aware makes after it), match of a
 * stored prompt followed by a new turn, and insert at the bound (every insert evicts).
 *
 * Part 3: one walk of the tree per prompt size (see part3).
 */
import { parseRouterConfig } from '../src/core/config/schema.ts';
import { systemClock, systemRandom } from '../src/core/contracts/runtime.ts';
import type { Fleet } from '../src/core/fleet/fleet.ts';
import { createFleetFromConfig } from '../src/core/fleet/from-config.ts';
import { MetricsRegistry } from '../src/core/observability/metrics.ts';
import { RadixTree } from '../src/core/policies/radix-tree.ts';
import { policyNeeds } from '../src/core/policies/registry.ts';
import { extractRoutingInput } from '../src/core/routing/routing-input.ts';
import { promptWords } from './prompt-words.ts';

const REPEATS = Number(process.env.REPEATS ?? 3);
const SIZES = (process.env.SIZES ?? '512,8192,65536').split(',').map(Number);
const TREE_SIZES = (process.env.TREE_SIZES ?? '1000,10000,100000').split(',').map(Number);
const ROUTE = '/v1/chat/completions';
const WORKERS = 4;
const IN_FLIGHT = 32;
/** Bodies parsed at a time: about 1 MB of them alive, as with tens of requests in flight. */
const batchFor = (size: number) => Math.max(8, Math.min(256, Math.floor(2 ** 20 / size)));
const COUNT = Number(process.env.COUNT ?? 8192);
const COLD = new Int32Array(Number(process.env.COLD_KB ?? 0) * 256);
/** Writes one word per 64-byte line of COLD: what the caches held is gone (untimed). */
function chill(): void {
  for (let i = 0; i < COLD.length; i += 16) COLD[i] = (COLD[i] ?? 0) + 1;
}

const { rand, words } = promptWords(42);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const spread = (xs: number[], digits = 2) =>
  `${median(xs).toFixed(digits)} [${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}]`;

// Part 1: extraction + route + settle per request.

function fleetFor(policy: string): Fleet {
  const config = parseRouterConfig({
    workers: { urls: Array.from({ length: WORKERS }, (_, i) => `http://10.0.0.${i + 1}:8000`) },
    policy: { name: policy },
    health: { disabled: true },
  });
  return createFleetFromConfig(config, {
    clock: systemClock,
    random: systemRandom,
    metrics: new MetricsRegistry(),
  });
}

/** `count` raw bodies of about `size` characters: the size's system prompt, then a distinct turn. */
function rawBodies(system: string, count: number, from: number): string[] {
  return Array.from({ length: count }, (_, k) =>
    JSON.stringify({
      model: 'bench-model',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `question ${from + k}: ${words(120)}` },
      ],
      max_tokens: 16,
    }),
  );
}

interface Times {
  /** Requests timed. */
  n: number;
  parse: number;
  extract: number;
  route: number;
}

const noHeaders = () => undefined;

/** Runs `count` requests through a fresh fleet; the first `warm` are not timed. Sums in ms. */
function runPolicy(policy: string, system: string, count: number, warm: number): Times {
  const batch = batchFor(system.length);
  const fleet = fleetFor(policy);
  const needs = policyNeeds([policy]);
  const reads = needs.text || needs.routingKey || needs.sessionId;
  const leases: number[] = [];
  const sum: Times = { n: 0, parse: 0, extract: 0, route: 0 };
  for (let done = 0; done < warm + count; done += batch) {
    const raws = rawBodies(system, batch, done);
    let t = performance.now();
    const bodies = raws.map((r) => JSON.parse(r) as Record<string, unknown>);
    const parse = performance.now() - t;
    const one = (b: Record<string, unknown>) =>
      reads ? extractRoutingInput(b, ROUTE, noHeaders, needs) : {};
    const decide = (input: ReturnType<typeof one>) => {
      const r = fleet.route({ model: 'bench-model', stream: false, ...input });
      if (!r.ok) throw new Error(`not routed: ${r.code}`);
      leases.push(r.lease);
      if (leases.length > IN_FLIGHT) fleet.settle(leases.shift() as number, { kind: 'success', status: 200 });
    };
    let extract = 0;
    let route = 0;
    if (COLD.length === 0) {
      t = performance.now();
      const inputs = bodies.map(one);
      extract = performance.now() - t;
      t = performance.now();
      for (const input of inputs) decide(input);
      route = performance.now() - t;
    } else {
      for (const b of bodies) {
        chill();
        t = performance.now();
        const input = one(b);
        extract += performance.now() - t;
        chill();
        t = performance.now();
        decide(input);
        route += performance.now() - t;
      }
    }
    if (done >= warm) {
      sum.n += batch;
      sum.parse += parse;
      sum.extract += extract;
      sum.route += route;
    }
  }
  return sum;
}

function part1(): void {
  console.log(
    `\n## Routing decision per request (${WORKERS} workers, ${IN_FLIGHT} in flight, ${COLD.length ? `caches chilled by ${COLD.length / 256} KB, ` : ''}${REPEATS} repeats: median [min-max], µs)\n`,
  );
  console.log(
    '| prompt | JSON.parse (yardstick) | text extraction | route+settle round_robin | route+settle cache_aware | decision round_robin | decision cache_aware | cache_aware - round_robin | ratio |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const size of SIZES) {
    const system = `You are a careful assistant. ${words(Math.max(0, size - 180))}`;
    const per = { parse: [] as number[], extract: [] as number[], rr: [] as number[], ca: [] as number[] };
    const total = { rr: [] as number[], ca: [] as number[], diff: [] as number[], ratio: [] as number[] };
    for (let r = 0; r < REPEATS; r++) {
      const rr = runPolicy('round_robin', system, COUNT, 1024);
      const ca = runPolicy('cache_aware', system, COUNT, 1024);
      const us = (ms: number, t: Times = ca) => (ms * 1000) / t.n;
      per.parse.push(us(ca.parse));
      per.extract.push(us(ca.extract));
      per.rr.push(us(rr.route, rr));
      per.ca.push(us(ca.route));
      const rrTotal = us(rr.extract + rr.route, rr);
      const caTotal = us(ca.extract + ca.route);
      total.rr.push(rrTotal);
      total.ca.push(caTotal);
      total.diff.push(caTotal - rrTotal);
      total.ratio.push(caTotal / rrTotal);
    }
    const body = rawBodies(system, 1, 0)[0]?.length ?? 0;
    console.log(
      `| ${(body / 1024).toFixed(1)} KB | ${spread(per.parse)} | ${spread(per.extract)} | ${spread(per.rr)} | ${spread(per.ca)} | ${spread(total.rr)} | ${spread(total.ca)} | ${spread(total.diff)} | ${spread(total.ratio, 1)} |`,
    );
  }
}

// Part 2: the prefix tree as the number of stored prompts grows.

const SYSTEMS = Array.from({ length: 32 }, (_, i) => `system: assistant profile ${i}. ${words(1500)}\n`);
/** A prompt as the router builds it: one flat string (system prompt, the user turn, more turns). */
const flat = (...parts: string[]) => parts.join('');
const userTurn = (i: number) => `user: ${words(24 + (i % 40))} #${i}\n`;
/** Worker ids are long-lived strings in the router (their hashes computed once): built once here too. */
const TENANTS = Array.from({ length: WORKERS }, (_, i) => `http://10.0.0.${i + 1}:8000`);
const tenant = (i: number) => TENANTS[i % WORKERS] as string;
/** --max-tree-bytes 128 MiB (the default 64 MiB holds about 160k of these prompts): 100k fit without eviction. */
const MAX_TREE_BYTES = 128 * 2 ** 20;
const MAX_TREE_SIZE = parseRouterConfig({}).policy.maxTreeSize;
const OPS = 5000;
const all = () => true;

/** µs per call of `op(i)` for i in [from, from + OPS). */
function perOp(from: number, op: (i: number) => void): number {
  const t = performance.now();
  for (let i = from; i < from + OPS; i++) op(i);
  return ((performance.now() - t) * 1000) / OPS;
}

function treeRow(n: number, repeat: number) {
  const tree = new RadixTree();
  const tails = Array.from({ length: n + 3 * OPS }, (_, i) => userTurn(i + repeat * 1_000_000));
  const text = (i: number) => flat(SYSTEMS[i % SYSTEMS.length] as string, tails[i] as string);
  for (let i = 0; i < n; i++) tree.insert(text(i), tenant(i));
  const held = { bytes: tree.bytes, nodes: tree.stats().nodes };
  if (held.bytes > MAX_TREE_BYTES) throw new Error(`${n} prompts take ${held.bytes} B > --max-tree-bytes`);
  // Timed texts are built beforehand: the operations alone are measured.
  const fresh = Array.from({ length: 2 * OPS }, (_, k) => text(n + k));
  const insert = perOp(0, (k) => {
    tree.insert(fresh[k] as string, tenant(k));
    tree.evict(MAX_TREE_SIZE, MAX_TREE_BYTES);
  });
  const picks = Array.from({ length: OPS }, () => Math.floor(rand() * (n + OPS)));
  const queries = picks.map((j) => flat(text(j), `assistant: ${words(80)}\n`));
  const want = picks.map((j) => text(j).length);
  let hits = 0;
  const match = perOp(0, (k) => {
    if (tree.match(queries[k] as string, all).matched === want[k]) hits++;
  });
  if (hits !== OPS) throw new Error(`${OPS - hits} stored prompts were not matched whole`);
  const bound = tree.bytes;
  const atBound = perOp(OPS, (k) => {
    tree.insert(fresh[k] as string, tenant(k));
    tree.evict(MAX_TREE_SIZE, bound);
  });
  return { ...held, insert, match, atBound };
}

function part2(): void {
  console.log(
    `\n## Prefix tree per operation as stored prompts grow (${OPS} ops each, ${REPEATS} repeats: median [min-max], µs)\n`,
  );
  console.log(
    `Prompts: one of 32 system prompts (~1.5 KB) + a distinct user turn; 4 workers; --max-tree-bytes ${MAX_TREE_BYTES}.\n`,
  );
  console.log(
    '| stored prompts | nodes | tree MiB | insert | match (stored + new turn) | insert at the bound (evicts) |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const n of TREE_SIZES) {
    const rows = Array.from({ length: REPEATS }, (_, r) => treeRow(n, r));
    const col = (k: 'insert' | 'match' | 'atBound') => spread(rows.map((x) => x[k]));
    const first = rows[0] as ReturnType<typeof treeRow>;
    console.log(
      `| ${n} | ${first.nodes} | ${(first.bytes / 2 ** 20).toFixed(1)} | ${col('insert')} | ${col('match')} | ${col('atBound')} |`,
    );
  }
}

// Part 3: one walk of the tree as the prompt grows: a prompt that runs through a stored one, and
// one that diverges inside a stored label (the bisection), with match then insert (two walks, as
// before issue 16) against matchForInsert + recordMatched (one walk, what cache_aware does).

const WALK_OPS = 20_000;

function walkRow(size: number) {
  const system = `system: ${words(size)}\n`;
  const diverging = (k: number) =>
    flat(system.slice(0, Math.floor(size * (0.5 + k / (4 * WALK_OPS)))), `#${k}`);
  // Texts are built 16 at a time just before they are used (in cache, as the extraction leaves them).
  const timed = (make: (k: number) => string, op: (tree: RadixTree, text: string, k: number) => void) => {
    const tree = new RadixTree();
    tree.insert(system, tenant(0));
    let ms = 0;
    for (let from = 0; from < WALK_OPS; from += 16) {
      const texts = Array.from({ length: 16 }, (_, k) => make(from + k));
      const t = performance.now();
      for (let k = 0; k < 16; k++) op(tree, texts[k] as string, from + k);
      ms += performance.now() - t;
    }
    return (ms * 1000) / WALK_OPS;
  };
  const through = (k: number) => flat(system, userTurn(k));
  const two = (tree: RadixTree, text: string, k: number) => {
    tree.match(text, all);
    tree.insert(text, tenant(k));
  };
  const held: string[] = [];
  const one = (tree: RadixTree, text: string, k: number) => {
    tree.matchForInsert(text, all, held);
    tree.recordMatched(tenant(k));
  };
  const out = { match: [] as number[], two: [] as number[], one: [] as number[], diverge: [] as number[] };
  for (let r = 0; r < REPEATS; r++) {
    out.match.push(timed(through, (tree, text) => tree.match(text, all)));
    // The two ways alternate which goes first.
    const pair = [() => out.two.push(timed(through, two)), () => out.one.push(timed(through, one))];
    for (const run of r % 2 === 0 ? pair : pair.reverse()) run();
    out.diverge.push(timed(diverging, (tree, text) => tree.match(text, all)));
  }
  return out;
}

function part3(): void {
  console.log(
    `\n## One tree walk as prompts grow (${WALK_OPS} ops each, ${REPEATS} repeats: median [min-max], µs)\n`,
  );
  console.log(
    '| prompt | match (through a stored prompt) | match + insert | matchForInsert + recordMatched | match diverging inside a stored label |',
  );
  console.log('|---|---|---|---|---|');
  for (const size of SIZES) {
    const r = walkRow(size);
    console.log(
      `| ${(size / 1024).toFixed(1)} KB | ${spread(r.match)} | ${spread(r.two)} | ${spread(r.one)} | ${spread(r.diverge)} |`,
    );
  }
}

console.log(`node ${process.version}, ${process.arch}`);
// Warm-up (untimed): both policies and the tree code paths compiled before anything is measured.
for (const policy of ['round_robin', 'cache_aware']) runPolicy(policy, words(2000), 2048, 0);
treeRow(2000, 9);
const parts = (process.env.PART ?? '1,2,3').split(',');
if (parts.includes('1')) part1();
if (parts.includes('2')) part2();
if (parts.includes('3')) part3();
