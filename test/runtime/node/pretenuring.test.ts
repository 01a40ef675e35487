/**
 * The router on Node runs without V8's allocation-site pretenuring (src/adapters/node/v8-tuning.ts
 * says why: after a burst at saturation, pretenured per-request objects kept everything young they
 * pointed to alive until a full collection). With V8's --trace-pretenuring-statistics, every young
 * collection prints what pretenuring decided, unless pretenuring is off (counted from the first
 * request on: the router turns it off once node has loaded its modules); the same router with
 * `--allocation-site-pretenuring` given to node (which the router leaves as given) prints them.
 */
import { describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { builtEntry, spawnRouter } from '../router-process.ts';
import { chatLoad } from '../young-gc.ts';

async function pretenuringLines(nodeFlags: string[]): Promise<number> {
  const entry = await builtEntry();
  const engines = await Promise.all(
    ['pt-engine-a', 'pt-engine-b'].map((id) => startSimEngine({ id, host: '127.0.0.1', port: 0 })),
  );
  try {
    const router = await spawnRouter(process.execPath, [
      '--trace-pretenuring-statistics',
      ...nodeFlags,
      entry,
      ...['--port', '0', '--prometheus-port', '0', '--worker-urls', ...engines.map((e) => e.url)],
    ]);
    // From the first request on: collections while node loads the modules come before the router
    // runs.
    const from = router.output().length;
    try {
      await chatLoad(router.url, 1500, 16);
    } finally {
      await router.stop();
    }
    const lines = router.output().slice(from).split('\n');
    return lines.filter((line) => line.includes('pretenuring:')).length;
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}

describe('the router on Node and V8 pretenuring', () => {
  it('runs with allocation-site pretenuring off', async () => {
    expect(await pretenuringLines([])).toBe(0);
  }, 120_000);

  it('leaves it on when node is told so', async () => {
    expect(await pretenuringLines(['--allocation-site-pretenuring'])).toBeGreaterThan(0);
  }, 120_000);
});
