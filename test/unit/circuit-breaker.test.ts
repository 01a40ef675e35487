import { describe, expect, it } from 'vitest';
import {
  type BreakerOutcome,
  type BreakerSettings,
  type BreakerState,
  type BreakerStateName,
  breakerAvailable,
  breakerGate,
  breakerGaugeValue,
  breakerRecord,
  initialBreaker,
} from '../../src/core/resilience/circuit-breaker.ts';
import { outcomeForStatus } from '../../src/core/resilience/classify.ts';

const settings: BreakerSettings = {
  failureThreshold: 3,
  successThreshold: 2,
  timeoutDurationSecs: 60,
  windowDurationSecs: 120,
  disabled: false,
};

type Step =
  /** Ask the gate at time t (s); expect allow/probe, the resulting state and an optional transition. */
  | { t: number; gate: { allow: boolean; probe?: boolean }; state: BreakerStateName; to?: BreakerStateName }
  /** Record an outcome at time t (s) for a request admitted as a probe or not. */
  | { t: number; record: BreakerOutcome; probe?: boolean; state: BreakerStateName; to?: BreakerStateName };

/** Runs a script of gate/record steps with explicit times and checks every step. */
function run(
  steps: Step[],
  cfg: BreakerSettings = settings,
  start: BreakerState = initialBreaker(),
): BreakerState {
  let state = start;
  steps.forEach((step, i) => {
    const where = `step ${i} at t=${step.t}s`;
    const now = step.t * 1000;
    if ('gate' in step) {
      const r = breakerGate(state, cfg, now);
      expect({ allow: r.allow, probe: r.probe }, where).toEqual({
        allow: step.gate.allow,
        probe: step.gate.probe ?? false,
      });
      expect(r.transition?.to, where).toBe(step.to);
      state = r.state;
    } else {
      const r = breakerRecord(state, cfg, step.record, now, step.probe ?? false);
      expect(r.transition?.to, where).toBe(step.to);
      state = r.state;
    }
    expect(state.state, where).toBe(step.state);
  });
  return state;
}

const fail = (t: number, state: BreakerStateName = 'closed', to?: BreakerStateName): Step => ({
  t,
  record: 'failure',
  state,
  to,
});

describe('circuit breaker transition table', () => {
  it('closed → open after failureThreshold consecutive failures; open refuses until the timeout', () => {
    run([
      { t: 0, gate: { allow: true }, state: 'closed' },
      fail(0),
      fail(1),
      fail(2, 'open', 'open'),
      { t: 2, gate: { allow: false }, state: 'open' },
      { t: 61.999, gate: { allow: false }, state: 'open' },
    ]);
  });

  it('a success resets the consecutive count', () => {
    run([
      fail(0),
      fail(1),
      { t: 2, record: 'success', state: 'closed' },
      fail(3),
      fail(4),
      fail(5, 'open', 'open'),
    ]);
  });

  it('neutral (capacity) and aborted outcomes neither count nor reset', () => {
    run([
      fail(0),
      { t: 1, record: 'neutral', state: 'closed' },
      { t: 2, record: 'aborted', state: 'closed' },
      fail(3),
      { t: 4, record: 'neutral', state: 'closed' },
      fail(5, 'open', 'open'),
    ]);
  });

  it('the window is real: failures older than windowDurationSecs are forgotten', () => {
    // Two failures at 0 and 10 s; by 130 s the first is 130 s old (> 120) and the second 120 s old (= window).
    run([fail(0), fail(10), fail(130), fail(131), fail(132, 'open', 'open')]);
    // A failure exactly one window old is forgotten; just inside the window it still counts.
    run([fail(0), fail(0), fail(120)]);
    run([fail(0), fail(10), fail(119.999, 'open', 'open')]);
  });

  it('failures spaced wider than the window never open the circuit', () => {
    const state = run(Array.from({ length: 50 }, (_, i) => fail(i * 121)));
    expect(state.failures).toHaveLength(1);
  });

  it('stores the timestamps of the failure run; opening empties them (bounded storage)', () => {
    const state = run([fail(0), fail(1)]);
    expect(state.failures).toEqual([0, 1000]);
    expect(run([fail(2, 'open', 'open')], settings, state).failures).toEqual([]);
  });

  it('open → half_open in the gate once the timeout elapsed; that request is a probe', () => {
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    expect(opened.openedAt).toBe(0);
    run(
      [
        { t: 59, gate: { allow: false }, state: 'open' },
        { t: 60, gate: { allow: true, probe: true }, state: 'half_open', to: 'half_open' },
      ],
      settings,
      opened,
    );
  });

  it('half-open admits at most successThreshold concurrent probes; the next is refused', () => {
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    const s = run(
      [
        { t: 60, gate: { allow: true, probe: true }, state: 'half_open', to: 'half_open' },
        { t: 60, gate: { allow: true, probe: true }, state: 'half_open' },
        { t: 60, gate: { allow: false }, state: 'half_open' },
        { t: 61, gate: { allow: false }, state: 'half_open' },
        // a neutral or aborted probe frees its slot without counting
        { t: 62, record: 'neutral', probe: true, state: 'half_open' },
        { t: 62, gate: { allow: true, probe: true }, state: 'half_open' },
        { t: 63, record: 'aborted', probe: true, state: 'half_open' },
        { t: 63, gate: { allow: true, probe: true }, state: 'half_open' },
        { t: 63, gate: { allow: false }, state: 'half_open' },
      ],
      settings,
      opened,
    );
    expect(s.probesInFlight).toBe(2);
    expect(s.probeSuccesses).toBe(0);
  });

  it('successThreshold probe successes close the circuit', () => {
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    const s = run(
      [
        { t: 60, gate: { allow: true, probe: true }, state: 'half_open', to: 'half_open' },
        { t: 60, gate: { allow: true, probe: true }, state: 'half_open' },
        { t: 61, record: 'success', probe: true, state: 'half_open' },
        { t: 62, record: 'success', probe: true, state: 'closed', to: 'closed' },
        { t: 62, gate: { allow: true }, state: 'closed' },
      ],
      settings,
      opened,
    );
    expect(s.failures).toEqual([]);
    // and it takes failureThreshold fresh failures to open again
    run([fail(63), fail(64), fail(65, 'open', 'open')], settings, s);
  });

  it('one failure while half-open re-opens at once, with a fresh timeout', () => {
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    const s = run(
      [
        { t: 60, gate: { allow: true, probe: true }, state: 'half_open', to: 'half_open' },
        { t: 61, record: 'success', probe: true, state: 'half_open' },
        { t: 61, gate: { allow: true, probe: true }, state: 'half_open' },
        { t: 70, record: 'failure', probe: true, state: 'open', to: 'open' },
        { t: 70, gate: { allow: false }, state: 'open' },
        { t: 129, gate: { allow: false }, state: 'open' },
        { t: 130, gate: { allow: true, probe: true }, state: 'half_open', to: 'half_open' },
      ],
      settings,
      opened,
    );
    expect(s.probeSuccesses).toBe(0);
    expect(s.probesInFlight).toBe(1);
  });

  it('a worker answering 400 forever never opens (the classifier calls 400 a success)', () => {
    const classes = { retryable: new Set([500, 502, 503, 504]), capacity: new Set([429]) };
    let state = initialBreaker();
    for (let i = 0; i < 1000; i++) {
      const gate = breakerGate(state, settings, i);
      expect(gate.allow).toBe(true);
      const outcome = outcomeForStatus(400, classes).kind;
      state = breakerRecord(gate.state, settings, outcome, i, gate.probe).state;
    }
    expect(state.state).toBe('closed');
    // while 503 forever opens after failureThreshold
    expect(outcomeForStatus(503, classes).kind).toBe('failure');
  });

  it('disabled: always allows and never opens', () => {
    const off = { ...settings, disabled: true };
    const s = run(
      [...Array.from({ length: 20 }, (_, i) => fail(i)), { t: 30, gate: { allow: true }, state: 'closed' }],
      off,
    );
    expect(s.failures).toEqual([]);
    // disabling an open breaker closes it (reported so the gauge follows)
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    run([{ t: 1, gate: { allow: true }, state: 'closed', to: 'closed' }], off, opened);
  });

  it('isolation: one worker’s open circuit never affects another', () => {
    const a = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    const b = initialBreaker();
    expect(breakerGate(a, settings, 1000).allow).toBe(false);
    expect(breakerGate(b, settings, 1000).allow).toBe(true);
    expect(b).toEqual(initialBreaker());
    expect(a).not.toBe(b);
  });
});

describe('circuit breaker details', () => {
  it('transitions are pure: inputs are never mutated and state is JSON round-trippable', () => {
    const s0 = initialBreaker();
    const frozen = JSON.stringify(s0);
    const r = breakerRecord(s0, settings, 'failure', 5, false);
    expect(JSON.stringify(s0)).toBe(frozen);
    expect(JSON.parse(JSON.stringify(r.state))).toEqual(r.state);
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    const copy = structuredClone(opened);
    breakerGate(opened, settings, 60_000);
    expect(opened).toEqual(copy);
  });

  it('late outcomes of requests admitted before the circuit moved are ignored', () => {
    // A request admitted while closed fails after the circuit opened: no effect on the open timeout.
    let s = initialBreaker();
    const early = breakerGate(s, settings, 0);
    s = run([fail(1), fail(2), fail(3, 'open', 'open')], settings, early.state);
    const late = breakerRecord(s, settings, 'failure', 50_000, early.probe, early.generation);
    expect(late.state).toEqual(s);
    // A probe from an earlier half-open period does not count in the next one.
    const p1 = breakerGate(s, settings, 63_000);
    s = breakerRecord(p1.state, settings, 'failure', 64_000, true, p1.generation).state; // re-open at 64 s
    const p2 = breakerGate(s, settings, 124_000);
    expect(p2.probe).toBe(true);
    const stale = breakerRecord(p2.state, settings, 'success', 125_000, true, p1.generation);
    expect(stale.state).toEqual(p2.state);
    // without a generation, a non-probe outcome while half-open is ignored too
    expect(breakerRecord(p2.state, settings, 'failure', 125_000, false).state).toEqual(p2.state);
  });

  it('breakerAvailable peeks without taking a probe slot', () => {
    const opened = run([fail(0), fail(0), fail(0, 'open', 'open')]);
    expect(breakerAvailable(opened, settings, 59_999)).toBe(false);
    expect(breakerAvailable(opened, settings, 60_000)).toBe(true);
    let s = breakerGate(opened, settings, 60_000).state;
    expect(breakerAvailable(s, settings, 60_000)).toBe(true);
    s = breakerGate(s, settings, 60_000).state;
    expect(breakerAvailable(s, settings, 60_000)).toBe(false);
    expect(s.probesInFlight).toBe(2);
  });

  it('a wall clock stepping backwards cannot keep the circuit open longer than the timeout', () => {
    const opened = run([fail(1000), fail(1000), fail(1000, 'open', 'open')]);
    // the clock steps back to t=0 s: the circuit stays open at most timeoutDurationSecs from then
    const back = breakerGate(opened, settings, 0);
    expect(back.allow).toBe(false);
    expect(breakerGate(back.state, settings, 59_999).allow).toBe(false);
    expect(breakerGate(back.state, settings, 60_000).allow).toBe(true);
  });

  it('gauge values: closed 0, open 1, half_open 2', () => {
    expect(breakerGaugeValue(initialBreaker())).toBe(0);
    expect(breakerGaugeValue('open')).toBe(1);
    expect(breakerGaugeValue('half_open')).toBe(2);
  });
});
