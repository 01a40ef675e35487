/**
 * An answer as the router's request handlers build it: a status, plain headers (lower-case names)
 * and a body of bytes, a stream, or none. A streamed body is a `ChunkSource` (a Web
 * `ReadableStream` is one): a host that writes the answer to its own response object (Node) reads
 * its chunks straight from it, without building a Web `Response` or stream; everywhere else
 * `toResponse` makes them.
 */
import type { ChunkSource } from './upstream.ts';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array | ChunkSource | null;
  /**
   * A streamed body whose first chunk is not in yet: a host that would hold the head back for the
   * first chunk's write (Node) sends it at once. Unset, the head goes out with the first chunk.
   */
  flushHead?: boolean;
}

/** A chunk source as a Web stream: one read of the source per pull, its cancel the stream's. */
export function webStreamOf(source: ChunkSource): ReadableStream<Uint8Array> {
  if (source instanceof ReadableStream) return source as ReadableStream<Uint8Array>;
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch (error) {
          controller.error(error);
          return;
        }
        if (result.done) controller.close();
        else controller.enqueue(result.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

export function toResponse(answer: Answer): Response {
  const { body } = answer;
  const init = body === null || body instanceof Uint8Array ? body : webStreamOf(body);
  return new Response(init as BodyInit | null, { status: answer.status, headers: answer.headers });
}
