/** A log sink that batches lines into one write per event-loop turn (cheap at thousands of lines/s). */
import type { LogSink } from '../../core/observability/logger.ts';

export function batchedStdoutSink(stream: NodeJS.WritableStream = process.stdout): LogSink {
  let pending: string[] = [];
  const flush = () => {
    const lines = pending;
    pending = [];
    stream.write(`${lines.join('\n')}\n`);
  };
  return (line) => {
    if (pending.length === 0) setImmediate(flush);
    pending.push(line);
  };
}
