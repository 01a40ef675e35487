/**
 * Deno's log sink batches request lines into few stdout writes, and loses none at exit: run in the
 * `deno` binary, with a recording writer in place of stdout and a flush period longer than the test.
 * And on a real stdout whose reader stalls, the program goes on: what is not read is bounded,
 * dropped past the bound, counted, and reported once the reader takes lines again.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { REPO_ROOT } from '../router-process.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const SINK = pathToFileURL(join(REPO_ROOT, 'src/adapters/deno/log-sink.ts')).href;
const CORE = pathToFileURL(join(REPO_ROOT, 'src/core/observability/')).href;
const dir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-sink-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs `body` in Deno with `sink` (batching for 60 s), whose writes are reported as
 * `WRITE <lines> <first>..<last>` (the first six characters of each).
 */
function runInDeno(name: string, body: string): string[] {
  const script = join(dir, `${name}.ts`);
  writeFileSync(
    script,
    `import { batchedStdoutSink } from '${SINK}';
const out = (text: string) => Deno.stdout.writeSync(new TextEncoder().encode(text + '\\n'));
const record = (bytes: Uint8Array) => {
  const lines = new TextDecoder().decode(bytes).split('\\n').filter((l) => l !== '');
  const head = (line: string | undefined) => (line ?? '').slice(0, 6).trim();
  out('WRITE ' + lines.length + ' ' + head(lines[0]) + '..' + head(lines[lines.length - 1]));
  return bytes.length;
};
const { sink, flush } = batchedStdoutSink({
  flushMs: 60_000,
  out: { write: async (bytes: Uint8Array) => record(bytes), writeSync: record },
});
const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
${body}`,
  );
  const stdout = execFileSync(DENO, ['run', script], {
    env: { ...process.env, DENO_DIR: join(dir, 'cache'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return stdout.trim().split('\n');
}

describe("Deno's batched log sink", () => {
  it('writes lines from many turns in one write, at exit (Deno.exit dispatches unload)', () => {
    const out = runInDeno(
      'exit',
      `for (let i = 1; i <= 5; i++) { sink('line ' + i); await turn(); }
out('BEFORE EXIT');
Deno.exit(0);`,
    );
    expect(out).toEqual(['BEFORE EXIT', 'WRITE 5 line 1..line 5']);
  });

  it('writes at once when 64 KB are pending, and what is left when the program ends by itself', () => {
    const out = runInDeno(
      'size',
      `const long = 'x'.repeat(1000);
for (let i = 1; i <= 70; i++) sink(i + ' ' + long);
out('AFTER 70');
sink('tail');
flush();
out('AFTER FLUSH');
sink('last');`,
    );
    // 66 lines of 1,002 characters pass 64 KB (65,536). The second batch waits for the first
    // write to finish (writes never block), and the last goes out at the exit.
    const first = 'WRITE 66 1 xxxx..66 xxx';
    const second = 'WRITE 5 67 xxx..tail';
    // The unref'd timer does not hold the program open for 60 s: the test's timeout would fire.
    expect(out).toEqual([first, 'AFTER 70', 'AFTER FLUSH', second, 'WRITE 1 last..last']);
  });

  it('keeps serving while nobody reads stdout, and reports the lines it dropped once someone does', async () => {
    const script = join(dir, 'stalled.ts');
    writeFileSync(
      script,
      `import { batchedStdoutSink } from '${SINK}';
import { createLogger } from '${CORE}logger.ts';
import { MetricsRegistry } from '${CORE}metrics.ts';
const log = batchedStdoutSink({ flushMs: 60_000, maxBacklogBytes: 256 * 1024 });
const logger = createLogger({ level: 'info', json: true, sink: log.sink, now: () => 0 });
const metrics = new MetricsRegistry();
log.reportToRouter({ logger, metrics });
const err = (text: string) => Deno.stderr.writeSync(new TextEncoder().encode(text + '\\n'));
for (let i = 0; i < 20_000; i++) {
  logger.info('request', { i, pad: 'x'.repeat(200) });
  if (i % 100 === 99) { log.flush(); await new Promise((r) => setTimeout(r, 0)); }
}
const page = await metrics.render();
err('ALIVE ' + (/^vllm_router_log_lines_dropped_total (\\d+)$/m.exec(page)?.[1] ?? 'none'));
await new Promise((r) => setTimeout(r, 1000)); // the reader takes what is queued meanwhile
logger.info('after');
log.flush();
await new Promise((r) => setTimeout(r, 200));
Deno.exit(0);`,
    );
    const child = spawn(DENO, ['run', script], {
      env: { ...process.env, DENO_DIR: join(dir, 'cache'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.pause(); // nobody reads: the pipe fills
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    const alive = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ALIVE within 20 s; stderr: ${stderr}`)), 20_000);
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const found = /ALIVE (\S+)/.exec(stderr);
        if (found) {
          clearTimeout(timer);
          resolve(found[1] as string);
        }
      });
    });
    const dropped = Number(alive);
    expect(dropped).toBeGreaterThan(10_000); // 20,000 lines of ~250 bytes; about 1,300 fit
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    const lines = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBe(20_000 - dropped + 2);
    expect(lines.at(-2)).toMatchObject({ msg: 'after' });
    expect(lines.at(-1)).toMatchObject({ level: 'warn', lines: dropped });
  }, 40_000);
});
