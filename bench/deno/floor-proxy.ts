/**
 * The floor of a router on Deno: bench/floor-proxy.ts's contract on Deno's own APIs, the least a
 * proxy in front of LLM engines can do per request there. `Deno.serve`, round robin over the
 * upstreams, the request body read in full, hop-by-hop headers dropped, Deno's `fetch` to the
 * engine with the client's signal (a client that leaves cancels the upstream request), the
 * engine's body handed back as it arrives (its stream passed to the response untouched). No
 * routing logic, no logging, no metrics. `npm run bench` runs it next to the router on Deno, so the
 * Deno figures can be read against what Deno itself costs.
 *
 *   deno run --allow-net bench/deno/floor-proxy.ts PORT URL[,URL...]   # prints "... listening on http://..."
 */

import { targetOf } from '../../src/core/http/inbound.ts';
import { HOP_BY_HOP } from '../hop-by-hop.ts';

/** The headers of a request or a response, minus the hop-by-hop ones (a plain object: cheaper). */
function forwardable(from: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  from.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out[name] = value;
  });
  return out;
}

function fail(status: number, message: string): Response {
  return Response.json({ error: { message, type: 'proxy_error', code: status } }, { status });
}

export function startDenoFloorProxy(port: number, upstreams: string[], hostname = '127.0.0.1') {
  let next = 0;
  return Deno.serve(
    {
      hostname,
      port,
      onListen: (addr) => console.log(`deno floor proxy listening on http://${addr.hostname}:${addr.port}`),
    },
    async (req) => {
      const body = req.method === 'GET' || req.method === 'HEAD' ? null : await req.arrayBuffer();
      const upstream = upstreams[next++ % upstreams.length] as string;
      try {
        const res = await fetch(upstream + targetOf(req.url), {
          method: req.method,
          headers: forwardable(req.headers),
          body,
          signal: req.signal,
          redirect: 'manual',
        });
        return new Response(res.body, { status: res.status, headers: forwardable(res.headers) });
      } catch (err) {
        return fail(502, `upstream failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  );
}

if (import.meta.main) {
  const [port, upstreams] = Deno.args;
  if (port === undefined || upstreams === undefined) {
    console.error('usage: deno run --allow-net bench/deno/floor-proxy.ts PORT URL[,URL...]');
    Deno.exit(2);
  }
  startDenoFloorProxy(Number(port), upstreams.split(','));
}
