/**
 * What the router tells its observers about every request once it is over (the live fleet page's
 * per-worker statistics, for one): one plain object per request, emitted by the exchange when it
 * finishes. Observers must be cheap and must not throw (an error is swallowed, never reaches a
 * request). Nothing in it is a secret, a prompt or a token.
 */
export interface RequestObservation {
  route: string;
  method: string;
  /** The requested model, as the client named it (unbounded: observers bound it themselves). */
  model?: string;
  stream: boolean;
  /** The worker that answered (or the last one tried). */
  worker?: string;
  status: number;
  /** Attempts made (more than 1: the request was retried). */
  attempts: number;
  /** Wall time of the whole request, ms. */
  latencyMs: number;
  /** Time to the first body chunk of a streamed answer, ms. */
  ttftMs?: number;
  /** The router's error code, when the router answered with an error. */
  error?: string;
  /** Token counts the engine reported in `usage`, when it did. */
  promptTokens?: number;
  completionTokens?: number;
  /** Monotonic clock ms when it finished. */
  at: number;
}

export type RequestObserver = (observation: RequestObservation) => void;

/** The observers of one router: added at assembly, told of every finished request. */
export class Observations {
  private observers: RequestObserver[] = [];

  add(observer: RequestObserver): void {
    this.observers = [...this.observers, observer];
  }

  get active(): boolean {
    return this.observers.length > 0;
  }

  emit(observation: RequestObservation): void {
    for (const observe of this.observers) {
      try {
        observe(observation);
      } catch {
        // An observer's fault never reaches a request.
      }
    }
  }
}
