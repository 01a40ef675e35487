/**
 * Faults over real loopback HTTP with the Node transport (issue 11): a 200 whose buffered body is
 * cut is never sent again, and a client's oversized streamed upload is the client's fault only.
 * The default cache_aware policy and a shared system prompt, as users run it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { engineRequests, metricSum, type Running, startStack } from '../support/harness.ts';

const SYSTEM = 'You are the timetable assistant of a mountain railway. '.repeat(12);
const chat = (question: string, stream = false) =>
  JSON.stringify({
    model: 'sim-model',
    stream,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: question },
    ],
  });

let stack: Running | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

describe('faults over loopback', () => {
  it('a 200 with a content-length cut mid-body is a 502 upstream_body_error, sent once, never retried', async () => {
    stack = await startStack({
      engines: 2,
      engineOptions: { failure: { mode: 'midstream' } },
      config: { policy: { name: 'cache_aware' } },
    });
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat('When is the first train?'),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_body_error');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    await res.arrayBuffer();
    expect(engineRequests(stack.engines)).toHaveLength(1);
  });

  it('oversized streamed uploads get 413 and leave every breaker closed; legitimate requests all succeed', async () => {
    stack = await startStack({
      engines: 2,
      config: { policy: { name: 'cache_aware' }, server: { maxPayloadSize: 4096 } },
    });
    const url = stack.router.url;
    for (let i = 0; i < 24; i++) {
      let sent = 0;
      const upload = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 16) return controller.close();
          sent++;
          controller.enqueue(new Uint8Array(1024).fill(65));
        },
      });
      const res = await fetch(`${url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: upload,
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(res.headers.get('x-router-error-code')).toBe('payload_too_large');
      await res.arrayBuffer();
    }
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: chat(`Question ${i}`, i % 2 === 0),
        }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    expect(answers).toEqual(Array(20).fill(200));
    expect(await metricSum(url, 'vllm_router_cb_outcomes_total{')).toBeGreaterThan(0);
    const failures = (await (await fetch(`${url}/metrics`)).text())
      .split('\n')
      .filter((l) => l.startsWith('vllm_router_cb_outcomes_total{') && l.includes('outcome="failure"'));
    expect(failures).toEqual([]);
    for (const w of stack.router.fleet.listWorkers()) expect(w.circuit).toBe('closed');
  });
});

describe('a slow engine over loopback', () => {
  it('engine A with TTFT 600 ms, B with 5 ms, shared prompt: most traffic goes to B', async () => {
    const { startSimEngine } = await import('../../src/sim/node.ts');
    const { startNodeRouter } = await import('../../src/adapters/node/server.ts');
    const { testConfig } = await import('../support/harness.ts');
    const slow = await startSimEngine({
      id: 'slow',
      host: '127.0.0.1',
      port: 0,
      ttftMs: 600,
      itlMs: 1,
      tokens: 4,
    });
    const fast = await startSimEngine({
      id: 'fast',
      host: '127.0.0.1',
      port: 0,
      ttftMs: 5,
      itlMs: 1,
      tokens: 4,
    });
    // The slow engine comes first and holds the shared prompt in the prefix tree; the fast one joins.
    const router = await startNodeRouter(
      testConfig([slow.url], { policy: { name: 'cache_aware' }, workers: { models: ['sim-model'] } }),
      { logSink: () => {} },
    );
    try {
      const warm = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat('Warm-up'),
      });
      expect(warm.headers.get('x-routed-worker-id')).toBe(slow.url);
      await warm.arrayBuffer();
      const added = await fetch(`${router.url}/add_worker?url=${encodeURIComponent(fast.url)}`, {
        method: 'POST',
      });
      expect(added.status).toBe(201);
      const served: string[] = [];
      for (let round = 0; round < 10; round++) {
        const batch = await Promise.all(
          Array.from({ length: 4 }, async (_, i) => {
            const res = await fetch(`${router.url}/v1/chat/completions`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: chat(`Round ${round}, question ${i}`, i % 2 === 0),
            });
            expect(res.status).toBe(200);
            await res.arrayBuffer();
            return res.headers.get('x-routed-worker-id') as string;
          }),
        );
        served.push(...batch);
      }
      const onSlow = served.filter((id) => id === slow.url).length;
      expect(onSlow / served.length).toBeLessThan(0.3);
    } finally {
      await router.close(0);
      await slow.close();
      await fast.close();
    }
  });
});
