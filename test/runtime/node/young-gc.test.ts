/**
 * The router on Node lets finished requests die young: under a few thousand requests (default
 * policy, a shared system prompt, half streamed, 16 at once) it promotes a small share of what it
 * allocates (about 0.5 % here). With a Set in place of the slot list of requests in flight
 * (routing/slot-list.ts says why it is not one), this test measured 16 %.
 */
import { describe, expect, it } from 'vitest';
import { builtEntry, spawnRouter } from '../router-process.ts';
import { measureYoungCollections } from '../young-gc.ts';

describe('the router on Node under load', () => {
  it('promotes under 3 % of what it allocates (finished requests are not kept)', async () => {
    const entry = await builtEntry();
    const gc = await measureYoungCollections((workerUrls) =>
      spawnRouter(process.execPath, [
        '--trace-gc-nvp',
        entry,
        ...['--port', '0', '--prometheus-port', '0', '--worker-urls', ...workerUrls],
      ]),
    );
    expect(gc.count).toBeGreaterThan(5);
    expect(gc.promoted / gc.allocated, JSON.stringify(gc)).toBeLessThan(0.03);
  }, 120_000);
});
