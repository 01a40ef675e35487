import type { ChunkSource, UpstreamResponse } from '../contracts/upstream.ts';

/** Reads an upstream body (buffered or streamed) to its end, for the router's own small calls. */
export async function readUpstreamBody(body: UpstreamResponse['body']): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  if (body instanceof Uint8Array) return body;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return concatChunks(chunks, size);
    chunks.push(value);
    size += value.byteLength;
  }
}

/** A streamed body, if it is one. */
export function streamedBody(body: UpstreamResponse['body']): ChunkSource | undefined {
  return body === null || body instanceof Uint8Array ? undefined : body;
}

/** Stops an answer's streamed body, if it has one (the answer is not used). */
export function discardBody(body: UpstreamResponse['body']): void {
  streamedBody(body)
    ?.cancel()
    .catch(() => {});
}

/** The chunks as one array (the only chunk itself when there is one). */
export function concatChunks(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
