/**
 * Whether a router process keeps finished requests alive: it runs with V8's --trace-gc-nvp, serves
 * a few thousand requests the way users send them (the default policy, one long system prompt
 * shared by every request, each its own user turn, half of them streamed, 16 at once, through the
 * OpenAI SDK), and its young collections are read from its output. A router that lets requests
 * die young promotes about 1 % of what it allocates once warm; one that keeps each finished
 * request reachable until a full collection promoted 10 % or more (docs/benchmarks.md, round 10).
 */
import OpenAI from 'openai';
import { startSimEngine } from '../../src/sim/node.ts';
import type { RouterProcess } from './router-process.ts';

export interface YoungCollections {
  /** Young collections counted. */
  count: number;
  allocated: number;
  promoted: number;
  /** Full collections (mark-compact) seen. */
  full: number;
}

/**
 * The young collections in a --trace-gc-nvp output: Deno's V8 prints each as JSON, Node's as
 * `key=value` pairs. Lines that another write cut in two are skipped.
 */
export function youngCollections(output: string): YoungCollections {
  const out: YoungCollections = { count: 0, allocated: 0, promoted: 0, full: 0 };
  for (const line of output.split('\n')) {
    const kind = /"gc":"(\w+)"|\bgc=(\w+)\b/.exec(line);
    if (!kind) continue;
    if ((kind[1] ?? kind[2]) !== 's') {
      out.full++;
      continue;
    }
    const allocated = /"allocated":(\d+)|\ballocated=(\d+)/.exec(line);
    const promoted = /"promoted":(\d+)|\bpromoted=(\d+)/.exec(line);
    if (!allocated || !promoted) continue;
    out.count++;
    out.allocated += Number(allocated[1] ?? allocated[2]);
    out.promoted += Number(promoted[1] ?? promoted[2]);
  }
  return out;
}

const SYSTEM = `You are a careful assistant for a support desk. ${'Answer briefly, cite the manual, and never guess. '.repeat(40)}`;

/** `total` chat completions, `concurrency` at a time, half of them streamed; every one must succeed. */
export async function chatLoad(url: string, total: number, concurrency: number): Promise<void> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const messages = [
        { role: 'system' as const, content: SYSTEM },
        { role: 'user' as const, content: `Ticket ${i}: my order ${i * 7919} has not arrived.` },
      ];
      if (i % 2 === 0) {
        const res = await client.chat.completions.create({ model: 'sim-model', messages, max_tokens: 8 });
        if (res.choices.length !== 1) throw new Error(`request ${i}: ${JSON.stringify(res)}`);
      } else {
        const stream = await client.chat.completions.create({
          model: 'sim-model',
          messages,
          max_tokens: 8,
          stream: true,
        });
        let chunks = 0;
        for await (const _ of stream) chunks++;
        if (chunks === 0) throw new Error(`request ${i}: an empty stream`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * Two simulated engines and the router `start` gives in front of them: `warmup` requests (while
 * V8 compiles the hot path and grows its young generation, much of what is allocated lives on:
 * code, feedback, pooled connections), then `total` more; the router's young collections during
 * the second part are the measure.
 */
export async function measureYoungCollections(
  start: (workerUrls: string[]) => Promise<RouterProcess>,
  { warmup = 2000, total = 4000 }: { warmup?: number; total?: number } = {},
): Promise<YoungCollections> {
  const engines = await Promise.all(
    ['gc-engine-a', 'gc-engine-b'].map((id) => startSimEngine({ id, host: '127.0.0.1', port: 0 })),
  );
  try {
    const router = await start(engines.map((e) => e.url));
    let from = 0;
    try {
      await chatLoad(router.url, warmup, 16);
      from = router.output().length;
      await chatLoad(router.url, total, 16);
    } finally {
      await router.stop();
    }
    return youngCollections(router.output().slice(from));
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}
