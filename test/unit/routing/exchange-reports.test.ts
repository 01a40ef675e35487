/**
 * A host that defers requests' reports (`Reports`, src/core/contracts/runtime.ts): what a finished
 * request does at once (permit, lease, deadline) and what waits for the host's queue (metrics, token
 * counts, observers, the log line), and that a request is reported once, as of when it finished.
 */
import { describe, expect, it } from 'vitest';
import type { Reportable } from '../../../src/core/contracts/runtime.ts';
import type { Upstream } from '../../../src/core/contracts/upstream.ts';
import { Exchange } from '../../../src/core/routing/exchange.ts';
import { proxyRequest } from '../../../src/core/routing/pipeline.ts';
import { routedTo, scriptedFleet, statusUpstream, testCall, testContext } from './context.ts';

const ANSWER = new TextEncoder().encode(
  JSON.stringify({ id: 'c-1', choices: [], usage: { prompt_tokens: 11, completion_tokens: 2 } }),
);

/** A host queue the test runs by hand. */
function handQueue() {
  const items: Reportable[] = [];
  return {
    items,
    reports: { add: (item: Reportable) => void items.push(item) },
    run: () => {
      for (const item of items.splice(0)) item.report();
    },
  };
}

const requestLines = (lines: string[]) => lines.filter((l) => l.includes(' request request_id='));

describe('Exchange.finish with a host that defers reports', () => {
  it('settles the lease and releases the permit at once; metrics, tokens and the log line wait for the queue', async () => {
    const fleet = scriptedFleet([routedTo('a', 4)]);
    fleet.fleet.models = () => ['m'];
    const upstream: Upstream = async () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: ANSWER,
    });
    const queue = handQueue();
    const lines: string[] = [];
    const { ctx, metrics } = testContext({
      fleet: fleet.fleet,
      upstream,
      reports: queue.reports,
      logSink: (line) => lines.push(line),
      config: { retry: { disabled: true } },
    });
    let releases = 0;
    const answer = await proxyRequest(ctx, testCall({ release: () => void releases++ }));

    expect(answer.status).toBe(200);
    expect(releases).toBe(1);
    expect(fleet.settled).toMatchObject([{ lease: 4, outcome: { kind: 'success', status: 200 } }]);
    expect(queue.items).toHaveLength(1);
    expect(await metrics.render()).not.toContain('vllm_router_requests_total{');
    expect(requestLines(lines)).toEqual([]);

    queue.run();
    const text = await metrics.render();
    expect(text).toContain(
      'vllm_router_requests_total{route="/v1/chat/completions",method="POST",status="200",model="m"} 1',
    );
    expect(text).toContain('vllm_router_prompt_tokens_total{model="m"} 11');
    expect(text).toContain('vllm_router_completion_tokens_total{model="m"} 2');
    const [line] = requestLines(lines);
    expect(line).toContain(' status=200 ');
    expect(line).toMatch(/ prompt_tokens=11 completion_tokens=2$/);
  });

  it('queues a request once however often it finishes, and reports the status and time it finished with', () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const queue = handQueue();
    const lines: string[] = [];
    const { ctx, clock } = testContext({
      fleet: fleet.fleet,
      upstream: statusUpstream([200]).upstream,
      reports: queue.reports,
      logSink: (line) => lines.push(line),
    });
    const ex = new Exchange(ctx, testCall());
    clock.advance(40);
    ex.finish(200, undefined);
    ex.finish(499, { kind: 'aborted' }, 'client_disconnected');
    expect(clock.pendingTimers).toBe(0); // the deadline's timer went with `finish`, not with the report
    clock.advance(500); // the report comes later: the latency it tells is the request's
    expect(queue.items).toHaveLength(1);
    queue.run();
    const [line] = requestLines(lines);
    expect(requestLines(lines)).toHaveLength(1);
    expect(line).toMatch(/ status=200 ms=40$/);
  });

  it('without a host queue, reports as the request finishes', () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const lines: string[] = [];
    const { ctx } = testContext({
      fleet: fleet.fleet,
      upstream: statusUpstream([200]).upstream,
      logSink: (line) => lines.push(line),
    });
    new Exchange(ctx, testCall()).finish(200, undefined);
    expect(requestLines(lines)).toHaveLength(1);
  });
});
