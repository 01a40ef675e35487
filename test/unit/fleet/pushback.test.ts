/**
 * Soft exclusions from capacity pushback and this request's history, through Fleet.route/settle with
 * default flags (cache_aware) and prompts that share a long system prompt: `avoid`, the Retry-After
 * cooldown, the escalating cooldown of pushback without Retry-After, and the quarantine of a worker
 * whose attempt stalled. Each keeps new requests off a worker only while another one is left.
 */
import { describe, expect, it } from 'vitest';
import { A, B, makeFleet, once, prompt, routed, share, simulate } from './support.ts';

const busy = { kind: 'neutral', status: 429 } as const;

/** Prompts only A has served (their whole text is in A's prefix tree, never in B's). */
const held = (i: number) => prompt(1000 + i);

/**
 * A fleet where A holds the shared prefix (every new prompt goes to A) and the `held` prompts. Tests
 * check that A is back with a `held` prompt B never saw: otherwise a prompt both hold only up to the
 * user turn ties, and a tie goes to the worker that processed fewer requests.
 */
function affineToA() {
  const made = makeFleet([A, B]);
  for (let i = 0; i < 20; i++) expect(once(made.fleet, { text: held(i), exclude: [B] })).toBe(A);
  expect(once(made.fleet, { text: prompt(1) })).toBe(A);
  return made;
}

describe('avoid (this request already got a retryable or capacity status there)', () => {
  it('sends the retry to another worker although the avoided one holds the prefix', () => {
    const { fleet } = affineToA();
    for (let i = 0; i < 4; i++) expect(once(fleet, { text: held(i), avoid: [A] })).toBe(B);
  });

  it('still routes to an avoided worker when it is the last one', () => {
    const { fleet } = affineToA();
    expect(once(fleet, { text: prompt(2), avoid: [A], exclude: [B] })).toBe(A);
    expect(once(fleet, { text: prompt(3), avoid: [A, B] })).toBe(A);
  });
});

describe('Retry-After', () => {
  it('keeps new requests off the worker until it expires', () => {
    const { fleet, clock } = affineToA();
    expect(once(fleet, { text: prompt(2) }, { ...busy, retryAfterMs: 2000 })).toBe(A);
    for (let i = 1; i < 5; i++) expect(once(fleet, { text: held(i) })).toBe(B);
    clock.advance(1999);
    expect(once(fleet, { text: held(5) })).toBe(B);
    clock.advance(1);
    expect(once(fleet, { text: held(0) })).toBe(A);
  });

  it('applies to a 503 with Retry-After too, and still routes when every worker is cooling', () => {
    const { fleet } = affineToA();
    expect(once(fleet, { text: prompt(2) }, { kind: 'failure', status: 503, retryAfterMs: 5000 })).toBe(A);
    expect(once(fleet, { text: prompt(3), exclude: [A] }, { ...busy, retryAfterMs: 5000 })).toBe(B);
    const r = fleet.route({ text: prompt(4) });
    expect(r.ok).toBe(true);
  });
});

describe('pushback without Retry-After', () => {
  /** `n` consecutive pushbacks on A (429s and 503s alternating); returns the fleet after the last. */
  function pushedBack(n: number) {
    const made = affineToA();
    for (let k = 0; k < n; k++) {
      const outcome = k % 2 === 0 ? busy : ({ kind: 'failure', status: 503 } as const);
      expect(once(made.fleet, { text: prompt(2), exclude: [B] }, outcome)).toBe(A);
    }
    return made;
  }

  /** A stays off for exactly `ms` after the last pushback. */
  function expectCooldown(made: ReturnType<typeof makeFleet>, ms: number, probe: number) {
    made.clock.advance(ms - 1);
    expect(once(made.fleet, { text: prompt(50 + probe) })).toBe(B);
    made.clock.advance(1);
    expect(once(made.fleet, { text: held(probe) })).toBe(A);
  }

  it('escalates from 250 ms, doubling per consecutive pushback, capped at 10 s', () => {
    const expected = [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000];
    for (const [i, ms] of expected.entries()) expectCooldown(pushedBack(i + 1), ms, i);
  });

  it('starts over after a success', () => {
    const made = pushedBack(4);
    expectCooldown(made, 2000, 0); // that probe was a success on A
    expect(once(made.fleet, { text: prompt(3), exclude: [B] }, busy)).toBe(A);
    expectCooldown(made, 250, 1);
  });

  it('is off with --pushback-cooldown-ms 0 (an explicit Retry-After still counts)', () => {
    const made = makeFleet([A, B], { circuitBreaker: { pushbackCooldownMs: 0 } });
    for (let i = 0; i < 20; i++) expect(once(made.fleet, { text: held(i), exclude: [B] })).toBe(A);
    for (let i = 0; i < 3; i++) expect(once(made.fleet, { text: held(i) }, busy)).toBe(A);
    expect(once(made.fleet, { text: held(3) }, { ...busy, retryAfterMs: 1000 })).toBe(A);
    expect(once(made.fleet, { text: held(4) })).toBe(B);
  });

  it('is not caused by other failures (a 500) or by a client that left', () => {
    const { fleet } = affineToA();
    expect(once(fleet, { text: held(0) }, { kind: 'failure', status: 500 })).toBe(A);
    expect(once(fleet, { text: held(1) }, { kind: 'aborted' })).toBe(A);
    expect(once(fleet, { text: held(2) })).toBe(A);
  });

  it('lowers the share of an engine that answers every request with an instant 429', () => {
    const { fleet, clock } = makeFleet([A, B]);
    const { workers } = simulate(fleet, clock, {
      total: 400,
      concurrency: 10,
      input: (i) => ({ text: prompt(i) }),
      answer: (w) =>
        w === A ? { ms: 1, outcome: busy } : { ms: 50, outcome: { kind: 'success', status: 200 } },
    });
    expect(share(workers, A)).toBeLessThan(0.1);
  });
});

describe('quarantine (an attempt stalled: no progress while other workers answered)', () => {
  const stalled = { kind: 'failure', stalled: true } as const;

  it('keeps new requests off the worker for the breaker open timeout', () => {
    const { fleet, clock } = affineToA();
    expect(once(fleet, { text: prompt(2) }, stalled)).toBe(A);
    for (let i = 1; i < 5; i++) expect(once(fleet, { text: held(i) })).toBe(B);
    clock.advance(59_999);
    expect(once(fleet, { text: held(5) })).toBe(B);
    clock.advance(1);
    expect(once(fleet, { text: held(0) })).toBe(A);
  });

  it('ends when an attempt routed after it began answers, not when an older one does', () => {
    const { fleet, clock } = affineToA();
    const older = routed(fleet.route({ text: prompt(2) }));
    expect(older.worker.id).toBe(A);
    clock.advance(10);
    expect(once(fleet, { text: prompt(3), exclude: [B] }, stalled)).toBe(A);
    fleet.settle(older.lease, { kind: 'success', status: 200 });
    expect(once(fleet, { text: held(1) })).toBe(B); // still quarantined
    // The last worker: routed there anyway, and its answer lifts the quarantine.
    expect(once(fleet, { text: prompt(5), exclude: [B] })).toBe(A);
    expect(once(fleet, { text: held(0) })).toBe(A);
  });

  it('counts the stall as a failure on the breaker', () => {
    const { fleet } = makeFleet([A, B], { circuitBreaker: { failureThreshold: 1 } });
    expect(once(fleet, { text: prompt(0), exclude: [B] }, stalled)).toBe(A);
    expect(fleet.getWorker(A)?.circuit).toBe('open');
  });
});

describe('the order of soft fallbacks', () => {
  it('prefers a worker the request avoids over a quarantined one', () => {
    const { fleet } = affineToA();
    expect(once(fleet, { text: prompt(2) }, { kind: 'failure', stalled: true })).toBe(A);
    expect(once(fleet, { text: prompt(3), avoid: [B] })).toBe(B);
  });

  it('prefers a cooling worker over one the request avoids', () => {
    const { fleet } = affineToA();
    expect(once(fleet, { text: prompt(2), exclude: [A] }, { ...busy, retryAfterMs: 5000 })).toBe(B);
    expect(once(fleet, { text: prompt(3), avoid: [A] })).toBe(B);
  });

  it('prefers a cooling worker over one its breaker ejected', () => {
    const { fleet } = makeFleet([A, B], { circuitBreaker: { failureThreshold: 1 } });
    expect(once(fleet, { text: prompt(0), exclude: [B] }, { kind: 'failure', status: 500 })).toBe(A);
    expect(once(fleet, { text: prompt(1), exclude: [A] }, { ...busy, retryAfterMs: 5000 })).toBe(B);
    for (let i = 2; i < 5; i++) expect(once(fleet, { text: prompt(i) })).toBe(B);
  });

  it('never relaxes the hard rules: excluded, unhealthy and draining workers', () => {
    const { fleet } = affineToA();
    expect(fleet.route({ text: prompt(2), exclude: [A, B], avoid: [A] })).toMatchObject({
      ok: false,
      code: 'no_available_workers',
    });
    fleet.setWorkerHealth(B, false);
    expect(once(fleet, { text: prompt(3), avoid: [A] })).toBe(A);
    fleet.setWorkerHealth(B, true);
    expect(fleet.removeWorker(A)).toBe(true);
    expect(once(fleet, { text: prompt(4), avoid: [B] })).toBe(B);
  });
});
