/**
 * Passes an engine's streaming body to the client chunk by chunk (no buffering, no re-chunking,
 * no parsing) and reports exactly once how it ended. A cut upstream never becomes a clean end:
 * SSE gets a final error event and no `[DONE]`; any other body errors so the truncation is visible.
 */

export type RelayEnd = 'end' | 'error' | 'cancel';

export interface RelayOptions {
  sse: boolean;
  /** Called once, when the body ends, fails or the client cancels it. */
  onDone(end: RelayEnd, error?: unknown): void;
  /** Called once, with the first chunk (time to first token). */
  onFirstChunk?(): void;
  /** Message for the SSE error event when the stream fails. */
  describeError?(error: unknown): string;
}

const encoder = new TextEncoder();

export function sseErrorEvent(message: string, needsSeparator: boolean): Uint8Array {
  const event = JSON.stringify({
    error: { message, type: 'upstream_stream_error', code: 'upstream_stream_error', param: null },
  });
  return encoder.encode(`${needsSeparator ? '\n\n' : ''}data: ${event}\n\n`);
}

export function relayStream(
  src: ReadableStream<Uint8Array>,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  let finished = false;
  let first = true;
  let lastByte = 0x0a;
  const finish = (end: RelayEnd, error?: unknown) => {
    if (finished) return;
    finished = true;
    options.onDone(end, error);
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch (error) {
          if (finished) return; // cancelled by the client meanwhile
          finish('error', error);
          if (options.sse) {
            const message = options.describeError?.(error) ?? 'upstream stream ended unexpectedly';
            controller.enqueue(sseErrorEvent(message, lastByte !== 0x0a));
            controller.close();
          } else {
            controller.error(error);
          }
          return;
        }
        if (result.done) {
          finish('end');
          controller.close();
          return;
        }
        const chunk = result.value;
        if (chunk.byteLength === 0) return;
        if (first) {
          first = false;
          options.onFirstChunk?.();
        }
        lastByte = chunk[chunk.byteLength - 1] as number;
        controller.enqueue(chunk);
      },
      cancel(reason) {
        finish('cancel', reason);
        return reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}
