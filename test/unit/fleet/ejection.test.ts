/**
 * The breaker never turns a blip into an outage: the last available workers of a pool are never
 * ejected (panic mode: routed to anyway, as regular requests, not half-open probes), and at most
 * --cb-max-ejection-percent of a pool is ejected at once (at least one worker of two or more; the
 * ejections that began longest ago are lifted first). Default flags, cache_aware, shared prompts.
 */
import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from '../../../src/core/contracts/fleet-api.ts';
import { ejectionLimit } from '../../../src/core/fleet/ejection.ts';
import { A, B, C, D, makeFleet, once, prompt, routed, simulate } from './support.ts';

const fail: AttemptOutcome = { kind: 'failure', status: 500 };
const opensAtOnce = { circuitBreaker: { failureThreshold: 1 } };

describe('panic mode: the last available worker', () => {
  it('a single engine: a blip of ten 503s opens its breaker, but no request is refused after it', () => {
    const { fleet, clock } = makeFleet([A]);
    let answered = 0;
    const { refused } = simulate(fleet, clock, {
      total: 400,
      concurrency: 4,
      input: (i) => ({ text: prompt(i), stream: i % 2 === 0 }),
      answer: () => {
        answered++;
        if (answered <= 10) return { ms: 2, outcome: { kind: 'failure', status: 503 } };
        return { ms: 20, outcome: { kind: 'success', status: 200 } };
      },
    });
    expect(fleet.getWorker(A)?.circuit).toBe('open'); // the blip did open it (10 consecutive failures)
    expect(refused).toBe(0);
  });

  it('routes to a worker whose breaker blocks when every other one is excluded, without a probe', () => {
    const { fleet, clock } = makeFleet([A, B], {
      circuitBreaker: { failureThreshold: 1, successThreshold: 1 },
    });
    expect(once(fleet, { text: prompt(0), exclude: [B] }, fail)).toBe(A);
    expect(fleet.getWorker(A)?.circuit).toBe('open');
    for (let i = 1; i < 4; i++) expect(once(fleet, { text: prompt(i) })).toBe(B);
    // The last candidate: its own answer passes through; success does not close an open breaker.
    expect(once(fleet, { text: prompt(4), exclude: [B] })).toBe(A);
    expect(fleet.getWorker(A)?.circuit).toBe('open');
    // After the open timeout, the next request is a real half-open probe again.
    clock.advance(60_000);
    const probe = routed(fleet.route({ text: prompt(5), exclude: [B] }));
    expect(fleet.getWorker(A)?.circuit).toBe('half_open');
    fleet.settle(probe.lease, { kind: 'success', status: 200 });
    expect(fleet.getWorker(A)?.circuit).toBe('closed');
  });

  it('routes past a half-open breaker whose probe slots are taken, as a regular request', () => {
    const { fleet, clock } = makeFleet([A], { circuitBreaker: { failureThreshold: 1, successThreshold: 1 } });
    expect(once(fleet, { text: prompt(0) }, fail)).toBe(A);
    clock.advance(60_000);
    const probe = routed(fleet.route({ text: prompt(1) }));
    expect(fleet.getWorker(A)?.circuit).toBe('half_open');
    // The slot is taken: this one is not a probe, so its failure does not re-open the breaker...
    expect(once(fleet, { text: prompt(2) }, fail)).toBe(A);
    expect(fleet.getWorker(A)?.circuit).toBe('half_open');
    // ...and the probe's success closes it.
    fleet.settle(probe.lease, { kind: 'success', status: 200 });
    expect(fleet.getWorker(A)?.circuit).toBe('closed');
  });

  it('never routes to unhealthy, draining or excluded workers, panic or not', () => {
    const { fleet } = makeFleet([A, B, C], opensAtOnce);
    expect(once(fleet, { text: prompt(0), exclude: [B, C] }, fail)).toBe(A);
    fleet.setWorkerHealth(B, false);
    expect(fleet.removeWorker(C)).toBe(true);
    expect(once(fleet, { text: prompt(1) })).toBe(A); // panic: A is all that is left
    fleet.setWorkerHealth(A, false);
    expect(fleet.route({ text: prompt(2) })).toMatchObject({ ok: false, code: 'no_available_workers' });
  });
});

describe('--cb-max-ejection-percent', () => {
  it('allows max(1, floor(n x percent)) ejections in a pool of two or more, none in a pool of one', () => {
    expect([1, 2, 3, 4, 5, 10].map((n) => ejectionLimit(n, 50))).toEqual([0, 1, 1, 2, 2, 5]);
    expect([1, 2, 4].map((n) => ejectionLimit(n, 0))).toEqual([0, 1, 1]);
    expect([1, 2, 4].map((n) => ejectionLimit(n, 100))).toEqual([0, 2, 4]);
  });

  /** Opens the breakers of `ids`, one per second, oldest first. */
  function openInTurn(percent?: number) {
    const config = {
      circuitBreaker: {
        failureThreshold: 1,
        ...(percent === undefined ? {} : { maxEjectionPercent: percent }),
      },
    };
    const made = makeFleet([A, B, C, D], config);
    for (const id of [A, B, C]) {
      expect(once(made.fleet, { text: prompt(0), exclude: [A, B, C, D].filter((x) => x !== id) }, fail)).toBe(
        id,
      );
      made.clock.advance(1000);
    }
    return made;
  }

  /**
   * The workers the breakers leave routable. A worker is routable when a request avoiding every
   * other worker goes to it (avoid is soft and applies after the breakers).
   */
  function routable(fleet: ReturnType<typeof makeFleet>['fleet']): Set<string> {
    const all = [A, B, C, D];
    const seen = new Set<string>();
    all.forEach((id, i) => {
      const got = once(fleet, { text: prompt(i), avoid: all.filter((x) => x !== id) });
      if (got === id) seen.add(id);
    });
    return seen;
  }

  it('default 50: with three of four breakers open, the oldest ejection is lifted', () => {
    const { fleet } = openInTurn();
    expect([A, B, C].map((id) => fleet.getWorker(id)?.circuit)).toEqual(['open', 'open', 'open']);
    expect(routable(fleet)).toEqual(new Set([A, D]));
    // Requests to a lifted worker are not probes: its breaker stays open.
    expect(fleet.getWorker(A)?.circuit).toBe('open');
  });

  it('100: every open breaker ejects its worker while one is left', () => {
    const { fleet } = openInTurn(100);
    expect(routable(fleet)).toEqual(new Set([D]));
  });

  it('0: still ejects one worker of a pool of two or more (the most recent)', () => {
    const { fleet } = openInTurn(0);
    expect(routable(fleet)).toEqual(new Set([A, B, D]));
  });

  it('two workers, both breakers open: the one opened first serves', () => {
    const { fleet, clock } = makeFleet([A, B], opensAtOnce);
    expect(once(fleet, { text: prompt(0), exclude: [B] }, fail)).toBe(A);
    clock.advance(5000);
    expect(once(fleet, { text: prompt(1), exclude: [A] }, fail)).toBe(B);
    for (let i = 2; i < 8; i++) expect(once(fleet, { text: prompt(i), avoid: [A] })).toBe(A);
  });
});
