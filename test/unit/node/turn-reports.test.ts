/**
 * The Node host's report queue (src/adapters/node/turn-reports.ts): the reports of one turn run
 * together after it, in the order their requests finished; one that throws does not stop the rest.
 */
import { describe, expect, it } from 'vitest';
import { turnReports } from '../../../src/adapters/node/turn-reports.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('turnReports', () => {
  it('runs the reports queued in one turn after it, together and in order; later ones in a later batch', async () => {
    const ran: string[] = [];
    const reports = turnReports(() => {});
    reports.add({ report: () => ran.push('a') });
    reports.add({ report: () => ran.push('b') });
    await Promise.resolve();
    expect(ran).toEqual([]); // not in the turn's microtasks: after its I/O callbacks
    await nextTurn();
    expect(ran).toEqual(['a', 'b']);

    reports.add({
      report: () => {
        ran.push('c');
        reports.add({ report: () => ran.push('d') }); // queued while a batch runs: the next batch
      },
    });
    await nextTurn();
    expect(ran).toEqual(['a', 'b', 'c']);
    await nextTurn();
    expect(ran).toEqual(['a', 'b', 'c', 'd']);
  });

  it('hands a report that throws to onError and still runs the rest of its batch', async () => {
    const errors: unknown[] = [];
    const ran: string[] = [];
    const reports = turnReports((err) => errors.push(err));
    reports.add({
      report: () => {
        throw new Error('metrics broke');
      },
    });
    reports.add({ report: () => ran.push('after') });
    await nextTurn();
    expect(errors.map((e) => (e as Error).message)).toEqual(['metrics broke']);
    expect(ran).toEqual(['after']);
  });

  it('still runs the rest of the batch when onError throws too', async () => {
    const ran: string[] = [];
    const reports = turnReports(() => {
      throw new Error('the log sink broke');
    });
    reports.add({
      report: () => {
        throw new Error('metrics broke');
      },
    });
    reports.add({ report: () => ran.push('after') });
    await nextTurn();
    expect(ran).toEqual(['after']);
  });

  it('flush runs what is queued now, once', async () => {
    const ran: string[] = [];
    const reports = turnReports(() => {});
    reports.add({ report: () => ran.push('a') });
    reports.flush();
    expect(ran).toEqual(['a']);
    await nextTurn();
    expect(ran).toEqual(['a']);
  });
});
