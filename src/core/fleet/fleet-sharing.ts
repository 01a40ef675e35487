/**
 * What a fleet tells the replicas it shares state with (FleetOptions.sharing; shared-fleet.ts
 * forwards it to the store). Only this fleet's own observations are reported: state it adopted
 * from another replica (`follow`, `adoptCircuit`, `adoptSession`, `recordPrefix`) is not echoed.
 */
import type { PolicySharing } from '../policies/policy.ts';
import type { CircuitView } from './registry-view.ts';

export interface FleetSharing extends PolicySharing {
  /** This fleet's breaker on a worker changed state. */
  circuitChanged(workerId: string, circuit: CircuitView): void;
  /** This fleet's health probes flipped a worker's verdict. */
  healthChanged(workerId: string, healthy: boolean): void;
}

/** A request's sticky session, where its pool's policy keeps sessions. */
export interface SessionPlace {
  pool: string;
  /** The pool's policy already holds it (placed here or adopted from another replica). */
  known: boolean;
}
