/**
 * A fleet's registry as another fleet follows it (on Workers, each model pool's Durable Object
 * follows the fleet's main object): what routing reads of each worker (identity, overrides, models,
 * health, breaker state, draining), none of what traffic changes (load, leases, processed counts,
 * latency and pushback signals). Following happens in place: a record that stays keeps its leases,
 * load and signals, and the policies keep their state.
 *
 * Breakers are not copied by following (each fleet counts the outcomes of its own requests); a
 * fleet takes another's word on a breaker with `adoptCircuit`: open (when its own is closed) or
 * closed (when its own is not). An adopted state counts as a state change for late outcomes (the
 * generation moves) but not as a transition of this fleet's own (no metric, no event).
 */
import type { WorkerSpec } from '../contracts/fleet-api.ts';
import type { BreakerStateName } from '../resilience/circuit-breaker.ts';
import { initialBreaker } from '../resilience/circuit-breaker.ts';
import { createWorkerRecord, type WorkerRecord } from './workers.ts';

export interface CircuitView {
  state: BreakerStateName;
  /** When it opened (open only). */
  openedAt?: number;
}

export interface WorkerView {
  id: string;
  /** Identity and overrides, as `addWorker` takes them (suspended included). */
  spec: WorkerSpec;
  models: string[] | null;
  modelsStatic: boolean;
  healthy: boolean;
  draining: boolean;
  circuit: CircuitView;
}

function workerView(w: WorkerRecord): WorkerView {
  const spec: WorkerSpec = { url: w.url, role: w.role };
  if (w.dpRank !== undefined) spec.dpRank = w.dpRank;
  if (w.bootstrapPort !== undefined) spec.bootstrapPort = w.bootstrapPort;
  if (w.source !== undefined) spec.source = { ...w.source };
  if (w.suspended) spec.suspended = true;
  if (w.priority !== undefined) spec.priority = w.priority;
  if (w.circuitBreaker !== undefined) spec.circuitBreaker = { ...w.circuitBreaker };
  if (w.retry !== undefined) spec.retry = { ...w.retry };
  const circuit: CircuitView = { state: w.breaker.state };
  if (w.breaker.openedAt !== undefined) circuit.openedAt = w.breaker.openedAt;
  return {
    id: w.id,
    spec,
    models: w.models ? [...w.models] : null,
    modelsStatic: w.modelsStatic,
    healthy: w.health.healthy,
    draining: w.draining,
    circuit,
  };
}

/** What following needs of the fleet it serves. */
export interface RegistryHost {
  probing(): boolean;
  now(): number;
  /** The registry changed: pools rebuild their membership. */
  changed(): void;
  /** Removes a worker the followed registry no longer lists (it drains while leased). */
  remove(id: string): unknown;
}

/** One fleet's side of following (Fleet.registry): its view, and following another's. */
export class RegistryLink {
  constructor(
    private readonly workers: Map<string, WorkerRecord>,
    private readonly host: RegistryHost,
  ) {}

  view(): WorkerView[] {
    return [...this.workers.values()].map(workerView);
  }

  /**
   * Brings the registry in line with `views` in place: new workers are added (with their
   * circuit), known ones take the views' overrides, models, health and draining state, and those
   * the views no longer list are removed.
   */
  follow(views: readonly WorkerView[]): void {
    const listed = new Set<string>();
    const now = this.host.now();
    for (const v of views) {
      listed.add(v.id);
      let w = this.workers.get(v.id);
      if (!w) {
        w = createWorkerRecord(v.spec, { probing: this.host.probing() });
        this.workers.set(w.id, w);
        adoptCircuit(w, v.circuit, now);
      }
      applyView(w, v);
    }
    this.host.changed();
    for (const id of [...this.workers.keys()]) if (!listed.has(id)) this.host.remove(id);
  }

  /** Takes another fleet's word on a worker's breaker (see the header); true when it changed. */
  adoptCircuit(id: string, circuit: CircuitView): boolean {
    const w = this.workers.get(id);
    return w !== undefined && adoptCircuit(w, circuit, this.host.now());
  }
}

function applyView(w: WorkerRecord, v: WorkerView): void {
  w.suspended = v.spec.suspended === true;
  setOverride(w, 'priority', v.spec.priority);
  setOverride(w, 'circuitBreaker', v.spec.circuitBreaker);
  setOverride(w, 'retry', v.spec.retry);
  w.models = v.models ? [...v.models] : null;
  w.modelsStatic = v.modelsStatic;
  w.draining = v.draining;
  if (w.health.healthy !== v.healthy) {
    w.health = { ...w.health, healthy: v.healthy, everHealthy: w.health.everHealthy || v.healthy };
  }
}

function setOverride<K extends 'priority' | 'circuitBreaker' | 'retry'>(
  w: WorkerRecord,
  key: K,
  value: WorkerRecord[K] | undefined,
): void {
  if (value === undefined) delete w[key];
  else w[key] = value;
}

/** Takes another fleet's word on `w`'s breaker (see the header). True when the state changed. */
function adoptCircuit(w: WorkerRecord, circuit: CircuitView, now: number): boolean {
  const generation = w.breaker.generation + 1;
  if (circuit.state === 'closed') {
    if (w.breaker.state === 'closed') return false;
    w.breaker = { ...initialBreaker(), generation };
    return true;
  }
  if (w.breaker.state !== 'closed') return false;
  const openedAt = circuit.openedAt ?? now;
  w.breaker = { state: 'open', failures: [], openedAt, probesInFlight: 0, probeSuccesses: 0, generation };
  return true;
}
