/** Token counts of answers the transport delivered whole (a Uint8Array body): read from its end. */
import { describe, expect, it } from 'vitest';
import { toResponse } from '../../../src/core/contracts/answer.ts';
import type { Upstream } from '../../../src/core/contracts/upstream.ts';
import { proxyRequest } from '../../../src/core/routing/pipeline.ts';
import { routedTo, scriptedFleet, testCall, testContext } from './context.ts';

const ANSWER = new TextEncoder().encode(
  JSON.stringify({
    id: 'cmpl-1',
    choices: [{ message: { content: 'Hi' } }],
    usage: { prompt_tokens: 11, total_tokens: 13, completion_tokens: 2 },
    prompt_logprobs: null,
  }),
);

async function tokensAfter(status: number, headers: Record<string, string>): Promise<string> {
  const fleet = scriptedFleet([routedTo('a', 1)]);
  fleet.fleet.models = () => ['m'];
  const upstream: Upstream = async () => ({ status, headers, body: ANSWER });
  const { ctx, metrics } = testContext({
    fleet: fleet.fleet,
    upstream,
    config: { retry: { disabled: true } },
  });
  const res = await proxyRequest(ctx, testCall());
  expect(res.status).toBe(status);
  await toResponse(res).arrayBuffer();
  return (await metrics.render())
    .split('\n')
    .filter(
      (l) =>
        l.startsWith('vllm_router_prompt_tokens_total{') ||
        l.startsWith('vllm_router_completion_tokens_total{'),
    )
    .join('\n');
}

describe('proxyRequest: usage of a buffered answer', () => {
  it('counts the prompt and completion tokens of a successful JSON answer, by model', async () => {
    expect(await tokensAfter(200, { 'content-type': 'application/json' })).toBe(
      'vllm_router_prompt_tokens_total{model="m"} 11\nvllm_router_completion_tokens_total{model="m"} 2',
    );
  });

  it('counts nothing for an error answer, a compressed one, or one that is not JSON', async () => {
    expect(await tokensAfter(500, { 'content-type': 'application/json' })).toBe('');
    expect(await tokensAfter(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })).toBe(
      '',
    );
    expect(await tokensAfter(200, { 'content-type': 'text/plain' })).toBe('');
  });
});
