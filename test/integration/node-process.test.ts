/**
 * The Node entry point as a real process: exit codes of the CLI, and SIGTERM draining a stream that
 * is in flight (stop accepting, let it finish, exit 0).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningEngine, startEngines } from '../support/harness.ts';

const ENTRY = ['--import', 'tsx', 'src/adapters/node/main.ts'];

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...ENTRY, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the vllm-edge-router command', () => {
  it('exits 2 naming an unknown flag and its nearest known flag', async () => {
    const { code, stderr } = await run(['--wroker-urls', 'http://127.0.0.1:1']);
    expect(code).toBe(2);
    expect(stderr).toContain('--wroker-urls');
    expect(stderr).toContain('--worker-urls');
  });

  it('exits 2 naming the flag and the allowed range for a bad value', async () => {
    const { code, stderr } = await run(['--retry-jitter-factor', '1.5']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--retry-jitter-factor.*between 0 and 1/);
  });

  it('prints the resolved configuration with --check-config and exits 0', async () => {
    const { code, stdout } = await run([
      '--service-discovery',
      'static',
      '--static-backends',
      'http://127.0.0.1:8001,http://127.0.0.1:8002',
      '--routing-logic',
      'roundrobin',
      '--check-config',
    ]);
    expect(code).toBe(0);
    const config = JSON.parse(stdout);
    expect(config.workers.urls).toEqual(['http://127.0.0.1:8001', 'http://127.0.0.1:8002']);
    expect(config.policy.name).toBe('round_robin');
  });

  it('prints the grouped flags with --help', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('--worker-urls');
    expect(stdout).toContain('--retry-max-retries');
  });
});

describe('SIGTERM', () => {
  let engines: RunningEngine[] = [];
  let child: ChildProcess | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(engines.map((e) => e.close()));
    engines = [];
  });

  it('stops accepting, lets the in-flight stream finish, then exits 0', async () => {
    engines = await startEngines(1, { tokens: 20, ttftMs: 5, itlMs: 25 });
    const proc = spawn(
      process.execPath,
      [
        ...ENTRY,
        '--port',
        '0',
        '--prometheus-port',
        '0',
        '--worker-urls',
        engines[0]!.url,
        '--policy',
        'round_robin',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (d) => {
        out += d;
        const m = /listening on (http:\/\/[\d.:]+)/.exec(out);
        if (m) resolve(m[1] as string);
      });
      proc.on('exit', () => reject(new Error(`router exited early: ${out}`)));
    });
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    proc.kill('SIGTERM');
    let text = '';
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/liveness`)).rejects.toThrow();
    expect(engines[0]!.engine.log[0]?.completed).toBe(true);
  });
});

describe('features this release does not have', () => {
  it.each([
    [['--api-key-validation-urls', 'http://127.0.0.1:9/validate'], '--api-key-validation-urls'],
    [
      ['--vllm-pd-disaggregation', '--prefill', 'http://127.0.0.1:8001', '--decode', 'http://127.0.0.1:8002'],
      'prefill/decode',
    ],
    [['--service-discovery', '--selector', 'app=vllm'], '--service-discovery'],
  ])('%j: refuses to start (exit 2) instead of running without it', async (args, named) => {
    const { code, stderr } = await run(args);
    expect(code).toBe(2);
    expect(stderr).toContain(named);
    expect(stderr).toContain('not available in this release');
  });
});
