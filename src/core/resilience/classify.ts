/** Classifies an engine's status for the worker's record (and, with retries, for the attempt loop). */
import type { AttemptOutcome } from '../contracts/fleet-api.ts';

export interface StatusClasses {
  retryable: ReadonlySet<number>;
  capacity: ReadonlySet<number>;
}

export function outcomeForStatus(status: number, classes: StatusClasses): AttemptOutcome {
  if (classes.capacity.has(status)) return { kind: 'neutral', status };
  if (classes.retryable.has(status)) return { kind: 'failure', status };
  return { kind: 'success', status };
}
