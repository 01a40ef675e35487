import { describe, expect, it } from 'vitest';
import { chainedBlockHash, PrefixCache } from '../../../src/sim/cache.ts';
import { createSimEngine, type SimEngine, type SimSleep } from '../../../src/sim/engine.ts';

function complete(engine: SimEngine, prompt: string, extra: Record<string, unknown> = {}) {
  return engine.fetch(
    new Request('http://sim/v1/completions', {
      method: 'POST',
      body: JSON.stringify({ prompt, max_tokens: 1, ...extra }),
    }),
  );
}

const block = (ch: string) => ch.repeat(64);

/** A sleep that records what it was asked to wait and resolves at once. */
function recordingSleep(): { sleep: SimSleep; waits: number[] } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

describe('sim engine: prefix cache', () => {
  it('hits every block of a repeated prompt and reports it in headers and usage', async () => {
    const engine = createSimEngine();
    const prompt = block('a') + block('b') + 'tail';
    const first = await complete(engine, prompt);
    expect(first.headers.get('x-sim-cached-blocks')).toBe('0/2');
    expect((await first.json()).usage.prompt_tokens_details.cached_tokens).toBe(0);
    const second = await complete(engine, prompt);
    expect(second.headers.get('x-sim-cached-blocks')).toBe('2/2');
    expect((await second.json()).usage.prompt_tokens_details.cached_tokens).toBe(32);
    expect(engine.log.map((e) => [e.cachedBlocks, e.promptBlocks])).toEqual([
      [0, 2],
      [2, 2],
    ]);
  });

  it('chains block hashes: a block hits only if every block before it hit', async () => {
    const engine = createSimEngine();
    await complete(engine, block('a') + block('b'));
    expect((await complete(engine, block('x') + block('b'))).headers.get('x-sim-cached-blocks')).toBe('0/2');
    expect(
      (await complete(engine, block('a') + block('c') + block('d'))).headers.get('x-sim-cached-blocks'),
    ).toBe('1/3');
    expect(
      (await complete(engine, block('a') + block('b') + block('e'))).headers.get('x-sim-cached-blocks'),
    ).toBe('2/3');
    // 'f' is cached after 'y', not after 'a': only the 'a' block hits
    await complete(engine, block('y') + block('f'));
    expect((await complete(engine, block('a') + block('f'))).headers.get('x-sim-cached-blocks')).toBe('1/2');
    expect(chainedBlockHash('same', 0, 4, 1)).not.toBe(chainedBlockHash('same', 0, 4, 2));
  });

  it('evicts the least recently used blocks beyond cacheBlocks', async () => {
    const engine = createSimEngine({ cacheBlocks: 2 });
    await complete(engine, block('a') + block('b'));
    await complete(engine, block('c') + block('d'));
    expect((await complete(engine, block('a') + block('b'))).headers.get('x-sim-cached-blocks')).toBe('0/2');
    expect(engine.stats().cache_size_blocks).toBe(2);
    const cache = new PrefixCache(0, 64);
    expect(cache.lookup(block('a')).cached).toBe(0);
    expect(cache.lookup(block('a')).cached).toBe(0);
  });

  it('adds blockMs of TTFT per uncached block (none on a PD decode leg)', async () => {
    const { sleep, waits } = recordingSleep();
    const engine = createSimEngine({ ttftMs: 10, blockMs: 5, itlMs: 1, sleep });
    const prompt = block('a') + block('b') + block('c');
    await complete(engine, prompt, { max_tokens: 3 });
    await complete(engine, prompt, { max_tokens: 3 });
    await complete(engine, block('z') + block('y'), {
      kv_transfer_params: { do_remote_prefill: true },
      max_tokens: 1,
    });
    // non-streaming: TTFT + (tokens - 1) × ITL
    expect(waits).toEqual([10 + 15 + 2, 10 + 2, 10]);
  });

  it('exports prefix cache counters in /metrics and clears the cache on /flush_cache', async () => {
    const engine = createSimEngine({ models: ['m'] });
    const prompt = block('a') + block('b');
    await complete(engine, prompt);
    await complete(engine, prompt);
    const metrics = await (await engine.fetch(new Request('http://sim/metrics'))).text();
    expect(metrics).toContain('vllm:prefix_cache_queries_total{model_name="m"} 64\n');
    expect(metrics).toContain('vllm:prefix_cache_hits_total{model_name="m"} 32\n');
    expect(metrics).toContain('vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.500000\n');
    const flushed = await engine.fetch(new Request('http://sim/flush_cache', { method: 'POST' }));
    expect(flushed.status).toBe(200);
    expect((await complete(engine, prompt)).headers.get('x-sim-cached-blocks')).toBe('0/2');
  });

  it('builds the chat prompt from role:content lines, text parts included', async () => {
    const engine = createSimEngine();
    const messages = [
      { role: 'system', content: 's'.repeat(70) },
      { role: 'user', content: [{ type: 'text', text: 'u'.repeat(70) }] },
    ];
    const send = () =>
      engine.fetch(
        new Request('http://sim/v1/chat/completions', { method: 'POST', body: JSON.stringify({ messages }) }),
      );
    expect((await send()).headers.get('x-sim-cached-blocks')).toBe('0/2');
    expect((await send()).headers.get('x-sim-cached-blocks')).toBe('2/2');
  });
});
