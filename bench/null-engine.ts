/**
 * An engine that costs next to nothing: it reads a request's body without parsing it and answers
 * every chat with the same short completion (its `usage` included), `/v1/models` with one model
 * and anything else with an empty 200. Used where the simulated engines, which parse and model
 * every prompt, would saturate the load's CPU before the proxies under test saturate theirs
 * (8 KB prompts: bench/policy-wrk.ts).
 *
 *   node --import tsx bench/null-engine.ts [PORT]   # prints "null engine listening on http://..."
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const completion = json({
  id: 'chatcmpl-null',
  object: 'chat.completion',
  created: 0,
  model: 'sim-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 2048, completion_tokens: 2, total_tokens: 2050 },
});
const models = json({ object: 'list', data: [{ id: 'sim-model', object: 'model', owned_by: 'bench' }] });
const empty = Buffer.alloc(0);

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    const url = req.url ?? '';
    const body = url.startsWith('/v1/chat') ? completion : url.startsWith('/v1/models') ? models : empty;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.byteLength });
    res.end(body);
  });
});
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`null engine listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
