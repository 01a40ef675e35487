/**
 * sticky_least_loaded through the whole core app (in memory, fake clock): a session whose
 * streaming answer is still open never moves; once it has finished, the next request moves it.
 */
import { describe, expect, it } from 'vitest';
import { chatBody, checkLeasesAfterEach, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const CMD =
  '--worker-urls http://a.test http://b.test --policy sticky_least_loaded --sll-rebalance-ratio 1.5 --disable-health-check';

describe('sticky_least_loaded in the app', () => {
  it('keeps a session with an open stream on its worker, and moves it once the stream ended', async () => {
    const app = await startApp(CMD, { 'a.test': {}, 'b.test': {} });
    const fleet = app.router.fleet;
    const [a, b] = fleet.listWorkers().map((w) => w.id) as [string, string];
    const send = (session: string, stream = false) =>
      app.post(chatBody(`turn of ${session}`, stream ? { stream: true } : {}), {
        headers: { 'x-session-id': session },
      });
    fleet.setWorkerHealth(b, false);
    for (let i = 0; i < 10; i++) {
      const res = await send(`s${i}`);
      expect(res.headers.get('x-routed-worker-id')).toBe(a);
      await res.text();
    }
    app.clock.advance(301_000); // past any cooldown, before the stream opens (it is not slow)
    const open = await send('s0', true); // its stream stays open: the request is in flight
    expect(open.headers.get('x-routed-worker-id')).toBe(a);
    fleet.setWorkerHealth(b, true);
    const during = await send('s0'); // 9 vs 0 would move it, but its first request is in flight
    expect(during.headers.get('x-routed-worker-id')).toBe(a);
    await during.text();
    expect(await app.metric('vllm_router_sll_rebalances_total')).toBe(0);
    await open.text(); // the stream ends
    const after = await send('s0');
    expect(after.headers.get('x-routed-worker-id')).toBe(b);
    await after.text();
    expect(await app.metric('vllm_router_sll_rebalances_total')).toBe(1);
    expect(await app.metric('vllm_router_sll_active_sessions', `worker="${b}"`)).toBe(1);
    expect(await app.metric('vllm_router_sll_active_sessions', `worker="${a}"`)).toBe(9);
  });
});
