/**
 * A request's abort signal without EventTarget: `CallAbort` is what each attempt hands its transport
 * (contracts/upstream.ts `CallSignal`). It aborts once; its listeners run once, in the order they
 * were added, and are dropped then (so `once` is how every listener behaves).
 */
import type { CallSignal } from '../contracts/upstream.ts';

export class CallAbort implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | undefined;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    if (this.listeners === undefined) this.listeners = [listener];
    else if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.listeners;
    if (listeners === undefined) return;
    const i = listeners.indexOf(listener);
    if (i >= 0) listeners.splice(i, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}

/** An `AbortSignal` that follows `signal` (itself, when it is one). */
export function abortSignalOf(signal: CallSignal): AbortSignal {
  if (signal instanceof AbortSignal) return signal;
  const ctl = new AbortController();
  if (signal.aborted) ctl.abort(signal.reason);
  else signal.addEventListener('abort', () => ctl.abort(signal.reason));
  return ctl.signal;
}
