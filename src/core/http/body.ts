/** Reads a request body once, enforcing --max-payload-size before and while reading. */
import type { Context } from 'hono';
import { RouterError } from '../contracts/errors.ts';

function tooLarge(limit: number): RouterError {
  return new RouterError(
    'payload_too_large',
    `request body exceeds the maximum payload size of ${limit} bytes`,
  );
}

export async function readBody(c: Context, limit: number): Promise<Uint8Array> {
  const declared = c.req.header('content-length');
  if (declared !== undefined) {
    const n = Number(declared);
    if (Number.isFinite(n) && n > limit) throw tooLarge(limit);
    // Within the limit as declared: the host's fast buffered read (it enforces the length).
    return new Uint8Array(await c.req.arrayBuffer());
  }
  const stream = c.req.raw.body;
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** True when the body announces more than `maxBuffered` bytes, or gives no length at all. */
export function tooLargeToBuffer(c: Context, maxBuffered: number): boolean {
  const declared = c.req.header('content-length');
  if (declared === undefined) return c.req.header('transfer-encoding') !== undefined;
  return Number(declared) > maxBuffered;
}

/** The body as a stream for the engine, still held to the payload limit. */
export function streamBody(c: Context, limit: number): ReadableStream<Uint8Array> | null {
  const declared = c.req.header('content-length');
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  const source = c.req.raw.body;
  if (!source) return null;
  let size = 0;
  return source.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.byteLength;
        if (size > limit) controller.error(tooLarge(limit));
        else controller.enqueue(chunk);
      },
    }),
  );
}
