/** Shared by the benchmarks: chat requests, a seeded PRNG, a command lookup, flags from the environment. */
import { execFileSync } from 'node:child_process';

/** One chat completion, answered with its status (0: no answer). */
export const chatBody = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 2,
});

/** The short chat of the proxy-overhead benches (16 tokens), streamed or not. */
export const shortChat = (stream: boolean) =>
  JSON.stringify({
    model: 'sim-model',
    stream,
    max_tokens: 16,
    messages: [{ role: 'user', content: 'Say hello to the benchmark in a few words.' }],
  });

/** Space-separated flags from an environment variable (NODE_FLAGS_A='--a --b'). */
export const flagsOf = (v: string | undefined) => (v ?? '').split(' ').filter((f) => f !== '');

export async function postChat(routerUrl: string, body = chatBody): Promise<number> {
  try {
    const res = await fetch(`${routerUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** A seeded PRNG (mulberry32), so every run and every mode sees the same prompts. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Whether a command is on the PATH (taskset, wrk, nginx). */
export function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
