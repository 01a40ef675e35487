/**
 * The router on Deno lets finished requests die young: under a few thousand requests (default
 * policy, a shared system prompt, half streamed, 16 at once) it promotes a small share of what it
 * allocates (about 1.3 % here). While its request objects held arrow functions over themselves
 * (contracts/callback-of.ts says why that matters on Deno), this test measured 10 %.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, spawnRouter } from '../router-process.ts';
import { measureYoungCollections } from '../young-gc.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const denoDir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-gc-'));

afterAll(() => rmSync(denoDir, { recursive: true, force: true }));

describe('the router on Deno under load', () => {
  it('promotes under 3 % of what it allocates (finished requests are not kept)', async () => {
    const gc = await measureYoungCollections((workerUrls) =>
      spawnRouter(
        DENO,
        [
          'run',
          '--v8-flags=--trace-gc-nvp',
          ...['--allow-net', '--allow-env', '--allow-read'],
          ENTRY,
          ...['--port', '0', '--prometheus-port', '0', '--worker-urls', ...workerUrls],
        ],
        { env: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1' } },
      ),
    );
    expect(gc.count).toBeGreaterThan(5);
    expect(gc.promoted / gc.allocated, JSON.stringify(gc)).toBeLessThan(0.03);
  }, 120_000);
});
