/** Reads an upstream body (buffered or streamed) to its end, for the router's own small calls. */
export async function readUpstreamBody(
  body: Uint8Array | ReadableStream<Uint8Array> | null,
): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  if (body instanceof Uint8Array) return body;
  return new Uint8Array(await new Response(body).arrayBuffer());
}
