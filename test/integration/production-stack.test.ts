/**
 * production-stack command lines over real loopback HTTP: the router is started from the resolved
 * command line (resolveConfig → startNodeRouter) in front of a simulated engine that answers every
 * inference request with 503, and the test counts what arrives at the engine. production-stack
 * retries only with --enable-retries (and then --max-retries N is N attempts, the first included);
 * the vLLM Router spellings retry by default (5 attempts). Also the installed command itself:
 * `vllm-edge-router launch ... --check-config` (SMG's form), naming the dialect it detected.
 */
import OpenAI from 'openai';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type NodeRouter, startNodeRouter } from '../../src/adapters/node/server.ts';
import { type ResolvedConfig, resolveConfig } from '../../src/core/config/load.ts';
import { builtEntry, REPO_ROOT, runToExit } from '../runtime/router-process.ts';
import { driveClock, FakeClock, seededRandom } from '../support/fake-clock.ts';
import { type RunningEngine, startEngines } from '../support/harness.ts';

/** Loopback, ephemeral ports, quiet logs: flags that say nothing about the dialect. */
const LOCAL = ['--host', '127.0.0.1', '--port', '0', '--prometheus-port', '0', '--log-level', 'error'];

let engine: RunningEngine | undefined;
let router: NodeRouter | undefined;
afterEach(async () => {
  await router?.close(0);
  await engine?.close();
  router = undefined;
  engine = undefined;
});

/** A fresh always-503 engine, and a router started from the command line `argv(engine URL)`. */
async function start(
  argv: (url: string) => string[],
): Promise<{ resolved: ResolvedConfig; clock: FakeClock }> {
  const [started] = await startEngines(1, { failure: { mode: 'status', status: 503 } });
  if (!started) throw new Error('no engine started');
  engine = started;
  const resolved = resolveConfig({
    argv: [...argv(started.url), ...LOCAL],
    env: {},
    readTextFile: () => '{}',
  });
  const clock = new FakeClock();
  router = await startNodeRouter(resolved.config, { clock, random: seededRandom(3), logSink: () => {} });
  return { resolved, clock };
}

const arrivals = () => (engine?.engine.log ?? []).filter((entry) => entry.kind === 'inference').length;

/** One chat completion through the openai SDK (its own retries off); resolves with the router's answer. */
async function ask(clock: FakeClock): Promise<{ status: number | undefined; attempts: string | null }> {
  const client = new OpenAI({ baseURL: `${router?.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  const call = client.chat.completions
    .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
    .then(
      () => ({ status: 200, attempts: null }),
      (err: unknown) => {
        if (!(err instanceof OpenAI.APIError)) throw err;
        return { status: err.status, attempts: err.headers?.get('x-router-attempts') ?? null };
      },
    );
  return driveClock(clock, call);
}

// biome-ignore format: quoted as production-stack's README prints it
const productionStack = (url: string) => [
  '--service-discovery', 'static',
  '--static-backends', url,
  '--static-models', 'sim-model',
  '--routing-logic', 'roundrobin',
];

describe('production-stack dialect against an engine that always answers 503', () => {
  it('without --enable-retries: exactly one arrival per request', async () => {
    const { resolved, clock } = await start((url) => [
      ...productionStack(url),
      '--pushback-cooldown-ms',
      '0',
    ]);
    expect(resolved.dialect.name).toBe('production-stack');
    for (let i = 1; i <= 3; i++) {
      expect(await ask(clock)).toEqual({ status: 503, attempts: '1' });
      expect(arrivals()).toBe(i);
    }
  });

  it('without --enable-retries its retry flags are ignored, even values it would refuse', async () => {
    const { resolved, clock } = await start((url) => [
      ...productionStack(url),
      '--max-retries',
      '3',
      '--backoff-multiplier',
      '0.5',
    ]);
    expect(resolved.warnings[0]).toMatch(
      /^--max-retries, --backoff-multiplier ignored: --enable-retries is absent/,
    );
    expect(await ask(clock)).toEqual({ status: 503, attempts: '1' });
    expect(arrivals()).toBe(1);
  });

  it('--enable-retries --max-retries 2: two attempts (production-stack counts the first one)', async () => {
    const { clock } = await start((url) => [
      ...productionStack(url),
      '--enable-retries',
      '--max-retries',
      '2',
    ]);
    expect(await ask(clock)).toEqual({ status: 503, attempts: '2' });
    expect(arrivals()).toBe(2);
  });

  it('a vLLM Router command line retries by default: 5 attempts', async () => {
    const { resolved, clock } = await start((url) => ['--worker-urls', url, '--policy', 'round_robin']);
    expect(resolved.dialect.name).toBe('vllm-router');
    expect(await ask(clock)).toEqual({ status: 503, attempts: '5' });
    expect(arrivals()).toBe(5);
  });

  it('a vLLM Router retry flag on a production-stack command line wins: --retry-max-retries 3', async () => {
    const { clock } = await start((url) => [...productionStack(url), '--retry-max-retries', '3']);
    expect(await ask(clock)).toEqual({ status: 503, attempts: '3' });
    expect(arrivals()).toBe(3);
  });
});

describe('the installed command', () => {
  beforeAll(async () => {
    await builtEntry(); // bin/vllm-edge-router.mjs (also `vllm-router`) runs dist/node/main.js
  });

  it("accepts SMG's `launch` word and prints the dialect with --check-config", async () => {
    const bin = `${REPO_ROOT}bin/vllm-edge-router.mjs`;
    const args = ['launch', ...productionStack('http://127.0.0.1:8001'), '--check-config'];
    const { code, output } = await runToExit(process.execPath, [bin, ...args]);
    expect(code).toBe(0);
    const printed = JSON.parse(output);
    expect(printed.dialect).toMatchObject({
      name: 'production-stack',
      retries: expect.stringMatching(/^off/),
    });
    expect(printed.retry.disabled).toBe(true);
    expect(printed.workers.urls).toEqual(['http://127.0.0.1:8001']);
  });
});
