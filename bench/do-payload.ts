/**
 * What a Worker isolate sends its fleet's Durable Object per routing call with `cache_aware`: the
 * route input as the RPC carries it (the UTF-8 bytes of its JSON here), with the prompt as text and as the
 * compact block-hash form the isolates send (src/core/policies/compact-text.ts), for chat prompts
 * of about 0.5, 8 and 64 KB, plus what compacting costs the isolate.
 *   npm run bench:do-payload
 */

import { compactRoutingText } from '../src/core/policies/compact-text.ts';
import { policyNeeds } from '../src/core/policies/registry.ts';
import { extractRoutingInput } from '../src/core/routing/routing-input.ts';

const needs = policyNeeds(['cache_aware']);
const rows: string[] = [];
for (const kb of [0.5, 8, 64]) {
  const system = 'You answer questions about the railway timetable, politely and precisely. '.repeat(
    Math.ceil((kb * 1024) / 75),
  );
  const body = {
    model: 'sim-model',
    messages: [
      { role: 'system', content: system.slice(0, kb * 1024) },
      { role: 'user', content: 'Which platform does the 9:14 leave from?' },
    ],
  };
  const input = {
    model: 'sim-model',
    ...extractRoutingInput(body, '/v1/chat/completions', () => undefined, needs),
  };
  const text = input.text ?? '';
  const compact = { ...input, text: compactRoutingText(text) };
  const rounds = 2000;
  const started = performance.now();
  for (let i = 0; i < rounds; i++) compactRoutingText(text);
  const us = ((performance.now() - started) * 1000) / rounds;
  const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).byteLength;
  const plain = bytes(input);
  const small = bytes(compact);
  rows.push(`| ${kb} KB | ${plain} | ${small} | ${(plain / small).toFixed(1)}× | ${us.toFixed(1)} |`);
}
console.log(
  '| prompt | route input with the text (bytes) | with the compact form (bytes) | smaller by | compacting (µs) |',
);
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) console.log(r);
