/**
 * An answer as the router's request handlers build it: a status, plain headers (lower-case names)
 * and a body of bytes, a stream, or none. A host that writes it to its own response object (Node)
 * does so without building a Web `Response`; everywhere else `toResponse` makes one.
 */

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
}

export function toResponse(answer: Answer): Response {
  return new Response(answer.body as BodyInit | null, { status: answer.status, headers: answer.headers });
}
