/**
 * Node's stdout sink over a real stream whose reader stalls: what the stream holds unread stays
 * near the bound (batches past it are dropped and counted), and once the reader catches up the
 * next write carries the router's report of the gap.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { batchedStdoutSink } from '../../../src/adapters/node/log-sink.ts';
import { createLogger } from '../../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../../src/core/observability/metrics.ts';

/** A stream whose reader can stall: while stalled, each write's callback is held back. */
function stallingStream() {
  const received: string[] = [];
  const held: (() => void)[] = [];
  let stalled = true;
  const stream = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _encoding, callback) {
      received.push(chunk.toString());
      if (stalled) held.push(callback);
      else callback();
    },
  });
  const resume = async () => {
    stalled = false;
    for (const callback of held.splice(0)) callback();
    while (stream.writableLength > 0) await new Promise((resolve) => setImmediate(resolve));
  };
  const lines = () => received.join('').split('\n').filter(Boolean);
  return { stream, resume, lines };
}

const line = (i: number) => `request ${i} ${'x'.repeat(90)}`;

describe('batchedStdoutSink (Node)', () => {
  it('keeps what a stalled reader has not taken near the bound, then reports the gap', async () => {
    const { stream, resume, lines } = stallingStream();
    const log = batchedStdoutSink(stream, { maxBacklogBytes: 10_000, flushMs: 60_000 });
    const report = { dropped: 0, resumed: [] as number[] };
    log.reportTo({
      dropped: (n) => {
        report.dropped += n;
      },
      resumed: (n) => {
        report.resumed.push(n);
        log.sink(`WARN dropped ${n}`, 'warn');
      },
    });
    let n = 0;
    for (let batch = 0; batch < 50; batch++) {
      for (let i = 0; i < 20; i++) log.sink(line(n++), 'info');
      log.flush();
      expect(stream.writableLength).toBeLessThan(10_000 + 20 * 110);
    }
    expect(report.dropped).toBeGreaterThan(800); // 1,000 lines logged, about 100 fit the bound
    const written = n - report.dropped;
    await resume();
    expect(lines()).toHaveLength(written);
    expect(lines().slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, i) => line(i)));

    log.sink('after', 'info');
    log.flush();
    await resume();
    expect(report.resumed).toEqual([report.dropped]);
    expect(lines().slice(written)).toEqual(['after', `WARN dropped ${report.dropped}`]);
  });

  it('writes every batch while the reader keeps up', async () => {
    const { stream, resume, lines } = stallingStream();
    await resume();
    const log = batchedStdoutSink(stream, { maxBacklogBytes: 1_000, flushMs: 60_000 });
    for (let batch = 0; batch < 30; batch++) {
      for (let i = 0; i < 20; i++) log.sink(line(batch * 20 + i), 'info');
      log.flush();
      await resume();
    }
    expect(lines()).toHaveLength(600);
  });

  it('reports to the router: its counter as batches drop, its warning in the log once they stop', async () => {
    const { stream, resume, lines } = stallingStream();
    const log = batchedStdoutSink(stream, { maxBacklogBytes: 2_000, flushMs: 60_000 });
    const logger = createLogger({ level: 'info', json: true, sink: log.sink, now: () => 0 });
    const metrics = new MetricsRegistry();
    log.reportToRouter({ logger, metrics });
    for (let batch = 0; batch < 10; batch++) {
      for (let i = 0; i < 10; i++) logger.info('request', { i });
      log.flush();
    }
    const page = await metrics.render();
    const dropped = Number(/^vllm_router_log_lines_dropped_total (\d+)$/m.exec(page)?.[1]);
    expect(dropped).toBeGreaterThanOrEqual(70);
    await resume();
    logger.info('after');
    log.flush();
    await resume();
    const last = lines()
      .slice(-2)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(last[0]).toMatchObject({ msg: 'after' });
    expect(last[1]).toMatchObject({ level: 'warn', lines: dropped });
    expect(lines()).toHaveLength(100 - dropped + 2);
  });
});
