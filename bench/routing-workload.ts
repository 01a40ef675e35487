/**
 * The multi-turn chat workload of the routing benchmarks (`npm run bench:routing`,
 * `npm run bench:replicas`): simulated engines with prefix caches, long distinct system prompts,
 * conversations whose every turn sends the whole history, a streaming chat client timing the first
 * byte, and the prefix-cache hit rate read from the engines' request logs.
 */
import { type RunningSimEngine, startSimEngine } from '../src/sim/node.ts';
import { prng } from './support.ts';

export const ENGINES = 4;
export const SIM = {
  ttftMs: 5,
  blockMs: 1,
  blockChars: 64,
  // Room for about a quarter of the conversations' histories per engine, not for all of them.
  cacheBlocks: 2400,
  maxRunning: 6,
  tokens: 24,
  itlMs: 0,
};

export interface Message {
  role: string;
  content: string;
}

const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november'.split(
  ' ',
);
function words(rand: () => number, n: number): string {
  return Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
}

export function systemPrompt(i: number): string {
  const rand = prng(1000 + i);
  return `You are assistant #${i} for team ${words(rand, 3)}. Policies: ${words(rand, 560)}.`;
}

export function userTurn(i: number, turn: number): string {
  return `Turn ${turn} of conversation ${i}: ${words(prng(i * 100 + turn), 40)}?`;
}

/** The `ENGINES` simulated engines, fresh (empty caches), in this process. */
export function startEngines(): Promise<RunningSimEngine[]> {
  return Promise.all(
    Array.from({ length: ENGINES }, (_, i) => startSimEngine({ id: `e${i}`, seed: 1 + i, ...SIM })),
  );
}

export interface Turn {
  ttftMs: number;
  answer: string;
  /** The engine that answered, as the router reported it (`x-routed-worker-id`; null: no router). */
  workerId: string | null;
}

/**
 * Sends one streamed chat turn; returns the TTFT and the assistant's answer. Throws when the answer
 * is not a 200 or the connection fails.
 */
export async function chat(
  url: string,
  messages: Message[],
  headers: Record<string, string> = {},
): Promise<Turn> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'sim-model', messages, stream: true, max_tokens: SIM.tokens }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`status ${res.status}: ${await res.text()}`);
  let ttftMs = -1;
  let raw = '';
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (ttftMs < 0) ttftMs = performance.now() - started;
    raw += decoder.decode(value, { stream: true });
  }
  let answer = '';
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
    if (typeof delta === 'string') answer += delta;
  }
  return { ttftMs, answer, workerId: res.headers.get('x-routed-worker-id') };
}

export interface Conversations {
  conversations: number;
  turns: number;
  concurrency: number;
  /** Sends turn `turn` of conversation `conv` (the history ends with its user message). */
  send(conv: number, turn: number, history: Message[]): Promise<Turn>;
}

/**
 * Runs the conversations, interleaved at a fixed concurrency (one turn in flight per conversation,
 * a conversation's next turn queued behind the others); answers the TTFT of every turn.
 */
export async function converse(run: Conversations): Promise<number[]> {
  const histories: Message[][] = Array.from({ length: run.conversations }, (_, i) => [
    { role: 'system', content: systemPrompt(i) },
  ]);
  const turnsDone = new Array<number>(run.conversations).fill(0);
  const queue = Array.from({ length: run.conversations }, (_, i) => i);
  const ttfts: number[] = [];
  const loop = async () => {
    for (;;) {
      const conv = queue.shift();
      if (conv === undefined) return;
      const history = histories[conv] as Message[];
      const turn = turnsDone[conv] as number;
      history.push({ role: 'user', content: userTurn(conv, turn) });
      const { ttftMs, answer } = await run.send(conv, turn, history);
      history.push({ role: 'assistant', content: answer });
      ttfts.push(ttftMs);
      turnsDone[conv] = turn + 1;
      if (turn + 1 < run.turns) queue.push(conv);
    }
  };
  await Promise.all(Array.from({ length: run.concurrency }, loop));
  return ttfts;
}

/** The engines' prefix-cache hit rate (cached / prompt blocks of the chat requests) and requests each. */
export function cacheHits(engines: readonly RunningSimEngine[]): { hitRate: number; requests: number[] } {
  let cached = 0;
  let blocks = 0;
  const requests: number[] = [];
  for (const e of engines) {
    const log = e.engine.log.filter((entry) => entry.path.endsWith('/chat/completions'));
    requests.push(log.length);
    for (const entry of log) {
      cached += entry.cachedBlocks ?? 0;
      blocks += entry.promptBlocks ?? 0;
    }
  }
  return { hitRate: blocks === 0 ? 0 : cached / blocks, requests };
}

/** Mean and p99 of TTFTs, in ms. */
export function ttftStats(values: readonly number[]): { meanTtft: number; p99Ttft: number } {
  const ttfts = [...values].sort((a, b) => a - b);
  return {
    meanTtft: ttfts.reduce((a, b) => a + b, 0) / ttfts.length,
    p99Ttft: ttfts[Math.min(ttfts.length - 1, Math.floor(ttfts.length * 0.99))] as number,
  };
}
