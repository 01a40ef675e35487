/**
 * The two bodies of a prefill/decode request, from the client's parsed body (never mutated):
 * - prefill: the same request cut to one generated token so the engine only fills its KV cache:
 *   `max_tokens: 1` (and `max_completion_tokens: 1` when the request has it; the Responses API's
 *   `max_output_tokens: 1`), `stream: false`, no `stream_options`, `n: 1`, `min_tokens` and
 *   `min_completion_tokens` dropped, plus the connector's `kv_transfer_params`;
 * - decode: the original request, plus the connector's `kv_transfer_params` when it has any.
 * These are the fields vLLM's own disaggregation proxies rewrite (toy_proxy_server.py for NIXL,
 * the Mooncake and P2P-NCCL proxies).
 */

export type JsonObject = Record<string, unknown>;

const encoder = new TextEncoder();

/** The routes a prefill/decode split applies to: generation APIs. */
export const PD_ROUTES: ReadonlySet<string> = new Set([
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/generate',
]);

/** The prefill leg's body. `kv` is omitted for connectors that send none (P2P-NCCL). */
export function prefillBody(original: JsonObject, route: string, kv?: JsonObject): Uint8Array {
  const body: JsonObject = { ...original };
  if (route === '/v1/responses') {
    body.max_output_tokens = 1;
  } else if (route === '/generate') {
    // /generate carries its limits in sampling_params (SGLang's max_new_tokens, vLLM's max_tokens).
    const sampling = isObject(body.sampling_params) ? { ...body.sampling_params } : {};
    sampling.max_new_tokens = 1;
    if ('max_tokens' in sampling) sampling.max_tokens = 1;
    delete sampling.min_new_tokens;
    delete sampling.min_tokens;
    body.sampling_params = sampling;
  } else {
    body.max_tokens = 1;
    if ('max_completion_tokens' in body) body.max_completion_tokens = 1;
  }
  body.stream = false;
  delete body.stream_options;
  if ('n' in body) body.n = 1;
  delete body.min_tokens;
  delete body.min_completion_tokens;
  if (kv !== undefined) body.kv_transfer_params = kv;
  else delete body.kv_transfer_params;
  return encoder.encode(JSON.stringify(body));
}

/** The decode leg's body: the client's request, plus `kv` when the connector passes any. */
export function decodeBody(original: JsonObject, kv?: JsonObject): Uint8Array {
  if (kv === undefined) return encoder.encode(JSON.stringify(original));
  return encoder.encode(JSON.stringify({ ...original, kv_transfer_params: kv }));
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
