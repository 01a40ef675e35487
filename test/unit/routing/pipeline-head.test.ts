/**
 * When the head of a streamed answer may wait for its first chunk (proxyRequest's `flushHead`): a
 * stream the pipeline answers once its first chunk is in sends its head with that chunk; an error
 * status passed through as it streams (retries spent) is answered before any chunk is read, and
 * says so, so the host sends the head at once.
 */
import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../src/core/contracts/upstream.ts';
import { proxyRequest } from '../../../src/core/routing/pipeline.ts';
import { routedTo, scriptedFleet, testCall, testContext } from './context.ts';

function streamingUpstream(status: number, contentType: string): Upstream {
  return async () => ({
    status,
    headers: { 'content-type': contentType },
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: 1\n\n'));
        controller.close();
      },
    }),
  });
}

async function answerOf(upstream: Upstream) {
  const { ctx } = testContext({
    fleet: scriptedFleet([routedTo('a', 1)]).fleet,
    upstream,
    config: { retry: { disabled: true } },
  });
  const answer = await proxyRequest(ctx, testCall({ info: { model: 'm', stream: true } }));
  const body = answer.body as { getReader(): { read(): Promise<ReadableStreamReadResult<Uint8Array>> } };
  const reader = body.getReader();
  while (!(await reader.read()).done) {
    // drained: the exchange finishes
  }
  return answer;
}

describe('proxyRequest: flushHead', () => {
  it('is unset for a stream answered with its first chunk already read', async () => {
    const answer = await answerOf(streamingUpstream(200, 'text/event-stream'));
    expect(answer.status).toBe(200);
    expect(answer.flushHead).toBeUndefined();
  });

  it('is set for a retryable error passed through as it streams', async () => {
    const answer = await answerOf(streamingUpstream(503, 'text/plain'));
    expect(answer.status).toBe(503);
    expect(answer.flushHead).toBe(true);
  });
});
