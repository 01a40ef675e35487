/**
 * Deno's log sink batches request lines into few stdout writes, and loses none at exit: run in the
 * `deno` binary, with a recording writer in place of stdout and a flush period longer than the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../router-process.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const SINK = pathToFileURL(join(REPO_ROOT, 'src/adapters/deno/log-sink.ts')).href;
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
const { sink, flush } = batchedStdoutSink(60_000, (bytes) => {
  const lines = new TextDecoder().decode(bytes).split('\\n').filter((l) => l !== '');
  const head = (line: string | undefined) => (line ?? '').slice(0, 6).trim();
  out('WRITE ' + lines.length + ' ' + head(lines[0]) + '..' + head(lines[lines.length - 1]));
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
    // 66 lines of 1,002 characters pass 64 KB (65,536).
    const first = 'WRITE 66 1 xxxx..66 xxx';
    const second = 'WRITE 5 67 xxx..tail';
    // The unref'd timer does not hold the program open for 60 s: the test's timeout would fire.
    expect(out).toEqual([first, 'AFTER 70', second, 'AFTER FLUSH', 'WRITE 1 last..last']);
  });
});
