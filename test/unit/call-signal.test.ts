/** The attempt's abort signal (core/upstream/call-signal.ts): once, in order, removable; and as an AbortSignal. */
import { describe, expect, it } from 'vitest';
import { abortSignalOf, CallAbort } from '../../src/core/upstream/call-signal.ts';

describe('CallAbort', () => {
  it('runs each listener once, in order, with the reason set; later aborts change nothing', () => {
    const signal = new CallAbort();
    const seen: string[] = [];
    const a = () => seen.push(`a:${String(signal.reason)}`);
    const b = () => seen.push('b');
    signal.addEventListener('abort', a);
    signal.addEventListener('abort', b);
    signal.addEventListener('abort', a); // the same listener twice is one listener
    expect(signal.aborted).toBe(false);
    signal.abort('gone');
    signal.abort('again');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('gone');
    expect(seen).toEqual(['a:gone', 'b']);
  });

  it('forgets a removed listener, and a listener added after the abort never runs', () => {
    const signal = new CallAbort();
    let runs = 0;
    const listener = () => runs++;
    signal.addEventListener('abort', listener);
    signal.removeEventListener('abort', listener);
    signal.abort('x');
    signal.addEventListener('abort', listener);
    expect(runs).toBe(0);
  });

  it('gives fetch an AbortSignal that follows it, before or after the abort', () => {
    const early = new CallAbort();
    early.abort('early');
    expect(abortSignalOf(early).aborted).toBe(true);
    expect(abortSignalOf(early).reason).toBe('early');
    const late = new CallAbort();
    const signal = abortSignalOf(late);
    expect(signal.aborted).toBe(false);
    late.abort('late');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('late');
    const native = new AbortController().signal;
    expect(abortSignalOf(native)).toBe(native);
  });
});
