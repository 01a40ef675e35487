/**
 * A client's upload streamed through to the engine (too large to buffer, not needed for routing),
 * still held to --max-payload-size. When the upload fails on the client's side (over the limit, or
 * the client's stream broke) the engine request fails too; `fault()` then names the client's error,
 * so the router answers it (413/400) and records nothing against the engine.
 */
import type { RouterError } from '../contracts/errors.ts';
import { bodyBrokeOff, tooLarge } from './body.ts';
import type { Inbound } from './inbound.ts';

export interface GuardedUpload {
  stream: ReadableStream<Uint8Array> | null;
  fault(): RouterError | undefined;
}

export function guardedUpload(inbound: Inbound, limit: number): GuardedUpload {
  const declared = inbound.header('content-length');
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  const source = inbound.stream();
  if (!source) return { stream: null, fault: () => undefined };
  let fault: RouterError | undefined;
  let size = 0;
  const reader = source.getReader();
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch (err) {
          fault = bodyBrokeOff(err);
          controller.error(fault);
          return;
        }
        if (result.done) return controller.close();
        size += result.value.byteLength;
        if (size <= limit) return controller.enqueue(result.value);
        fault = tooLarge(limit);
        controller.error(fault);
        reader.cancel().catch(() => {});
      },
      cancel(reason) {
        return reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, fault: () => fault };
}
