/**
 * The log batch's bound on what its writer holds unread: past the bound a batch is dropped and
 * counted, never written; the first batch written after the gap carries its report.
 */
import { describe, expect, it } from 'vitest';
import { backlogReport, lineBatch } from '../../../src/core/observability/line-batch.ts';
import { createLogger } from '../../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../../src/core/observability/metrics.ts';

/** A timer that never fires by itself: the test flushes. */
const manualTimer = { arm: () => 1, disarm: () => {} };

function batchWith(limit: number) {
  const writes: string[][] = [];
  let queued = 0;
  const report = { dropped: [] as number[], resumed: [] as number[] };
  const backlog = {
    bytes: () => queued,
    limit,
    report: {
      dropped: (n: number) => report.dropped.push(n),
      resumed: (n: number) => {
        report.resumed.push(n);
        batch.sink(`dropped ${n}`, 'warn');
      },
    },
  };
  const batch = lineBatch(
    (text) => {
      writes.push(text.trimEnd().split('\n'));
      queued += text.length;
    },
    manualTimer,
    20,
    backlog,
  );
  const log = (...lines: string[]) => {
    for (const line of lines) batch.sink(line, 'info');
  };
  return { batch, writes, report, log, drain: () => (queued = 0), queued: () => queued };
}

describe('lineBatch with a backlog bound', () => {
  it('writes while the reader keeps up, drops and counts batches past the bound', () => {
    const b = batchWith(100);
    b.log('a'.repeat(60), 'b'.repeat(60));
    b.batch.flush();
    expect(b.writes).toHaveLength(1); // nothing queued at that flush: written
    b.log('c', 'd', 'e');
    b.batch.flush();
    b.log('f');
    b.batch.flush();
    expect(b.writes).toHaveLength(1);
    expect(b.report.dropped).toEqual([3, 1]);
    expect(b.queued()).toBe(122); // the writer was given nothing more
  });

  it('writes the report with the first batch once the reader caught up, and the gap only once', () => {
    const b = batchWith(100);
    b.log('x'.repeat(150));
    b.batch.flush();
    b.log('lost 1', 'lost 2');
    b.batch.flush();
    b.drain();
    b.log('next');
    b.batch.flush();
    expect(b.report.resumed).toEqual([2]);
    expect(b.writes[1]).toEqual(['next', 'dropped 2']);
    expect(b.writes.flat()).not.toContain('lost 1');
    b.drain();
    b.log('again');
    b.batch.flush();
    expect(b.report.resumed).toEqual([2]);
    expect(b.writes[2]).toEqual(['again']);
  });

  it('without a backlog every batch is written', () => {
    const writes: string[] = [];
    const batch = lineBatch((t) => writes.push(t), manualTimer);
    batch.sink('one', 'info');
    batch.flush();
    batch.sink('two', 'info');
    batch.flush();
    expect(writes).toEqual(['one\n', 'two\n']);
  });
});

describe('backlogReport', () => {
  it('counts dropped lines in vllm_router_log_lines_dropped_total and warns once writing resumes', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', json: false, sink: (l) => lines.push(l), now: () => 0 });
    const metrics = new MetricsRegistry();
    const report = backlogReport(logger, metrics);
    expect(await metrics.render()).toMatch(/^vllm_router_log_lines_dropped_total 0$/m);
    report.dropped(3);
    report.dropped(4);
    expect(await metrics.render()).toMatch(/^vllm_router_log_lines_dropped_total 7$/m);
    expect(lines).toEqual([]);
    report.resumed(7);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/WARN .*log lines dropped.* lines=7$/);
  });
});
