/**
 * cache_aware on Workers: the isolates send the Durable Object each prompt's block hashes, and the
 * object's prefix tree still keeps a conversation on the engine that has its prefix cached.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimEngine, startSimEngine } from '../../../src/sim/node.ts';
import { type MiniflareWorker, startMiniflareWorker } from './miniflare-worker.ts';

let engines: RunningSimEngine[];
let worker: MiniflareWorker;

beforeAll(async () => {
  engines = await Promise.all(
    ['sim-a', 'sim-b'].map((id) => startSimEngine({ id, host: '127.0.0.1', port: 0, tokens: 3 })),
  );
  worker = await startMiniflareWorker({
    routerConfig: { workers: { urls: engines.map((e) => e.url) }, log: { level: 'error' } },
  });
});

afterAll(async () => {
  await worker?.dispose();
  await Promise.all(engines.map((e) => e.close()));
});

const chat = async (messages: { role: string; content: string }[]) => {
  const res = await fetch(`${worker.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-model', messages }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  return res.headers.get('x-routed-worker-id');
};

describe('cache_aware through the Durable Object', () => {
  it("each conversation's turns stay on one engine", async () => {
    const placed: string[][] = [];
    for (let c = 0; c < 4; c++) {
      const system = `Conversation ${c}: ${`rule ${c} of the help desk, to be followed exactly. `.repeat(30)}`;
      const messages = [{ role: 'system', content: system }];
      const turns: string[] = [];
      for (let t = 0; t < 3; t++) {
        messages.push({ role: 'user', content: `question ${t} of conversation ${c}` });
        turns.push((await chat(messages)) as string);
        messages.push({ role: 'assistant', content: `answer ${t}` });
      }
      placed.push(turns);
    }
    for (const turns of placed) expect(new Set(turns).size).toBe(1);
  });
});
