/**
 * Model pools: one policy instance per (role, model), with membership rebuilt lazily when the
 * registry changes. Requests for a model no known worker lists go to the wildcard pool (workers
 * whose models are unknown), so unknown model names never create pools.
 */

import type { WorkerRole } from '../contracts/fleet-api.ts';
import { createSharedPolicyState, type Policy, type PolicyContext } from '../policies/policy.ts';
import { createPolicy } from '../policies/registry.ts';
import { servesModel, type WorkerRecord } from './workers.ts';

export const WILDCARD = '*';

export interface Pool {
  readonly key: string;
  /** What its policy and other replicas call it: `<role>:<model>`, `*` for any model. */
  readonly label: string;
  readonly policy: Policy;
  members: WorkerRecord[];
  version: number;
}

export class PoolSet {
  private readonly pools = new Map<string, Pool>();
  /** The same pools by role, then model: a request's lookup builds no key. */
  private readonly byRole = new Map<WorkerRole, Map<string, Pool>>();
  private version = 0;
  /** Models listed by live workers, first seen first. */
  knownModels: string[] = [];
  /** Some live worker has not listed its models yet (it serves any model). */
  hasUnknownModels = false;

  /** Every pool's policy instance gets this context: one SharedPolicyState per fleet. */
  private readonly policyContext: Omit<PolicyContext, 'pool'>;

  constructor(
    private readonly workers: ReadonlyMap<string, WorkerRecord>,
    private readonly policies: Record<WorkerRole, string>,
    policyContext: Omit<PolicyContext, 'pool'>,
  ) {
    this.policyContext = { ...policyContext, shared: policyContext.shared ?? createSharedPolicyState() };
    // Fail at startup, not on the first request, when a policy is unavailable.
    for (const name of new Set(Object.values(policies)))
      createPolicy(name, { ...policyContext, pool: 'startup-check' });
  }

  /** The registry changed (worker added, removed, draining, models): rebuild lazily. */
  changed(): void {
    this.version++;
    const models = new Set<string>();
    let unknown = false;
    for (const w of this.workers.values()) {
      if (w.draining) continue;
      if (w.models === null) unknown = true;
      else for (const m of w.models) models.add(m);
    }
    this.knownModels = [...models];
    this.hasUnknownModels = unknown;
  }

  byKey(key: string): Pool | undefined {
    return this.pools.get(key);
  }

  all(): IterableIterator<[string, Pool]> {
    return this.pools.entries();
  }

  /** The pool for a role and a model (undefined: any model; WILDCARD: unknown-model workers). */
  get(role: WorkerRole, model: string | undefined): Pool {
    const name = model ?? '';
    let byModel = this.byRole.get(role);
    if (byModel === undefined) {
      byModel = new Map();
      this.byRole.set(role, byModel);
    }
    let pool = byModel.get(name);
    if (!pool) {
      const key = `${role}\u0001${name}`;
      const label = `${role}:${name === '' ? '*' : name}`;
      const policy = createPolicy(this.policies[role], { ...this.policyContext, pool: label });
      pool = { key, label, policy, members: [], version: -1 };
      this.pools.set(key, pool);
      byModel.set(name, pool);
    }
    if (pool.version !== this.version) {
      pool.members = [];
      for (const w of this.workers.values()) {
        if (w.role !== role || w.draining) continue;
        if (model === WILDCARD ? w.models === null : servesModel(w, model)) pool.members.push(w);
      }
      pool.version = this.version;
    }
    return pool;
  }

  /** Splits a pool key back into its role and model. */
  static parseKey(key: string): { role: WorkerRole; model: string | undefined } {
    const [role, model] = key.split('\u0001') as [WorkerRole, string];
    return { role, model: model === '' ? undefined : model };
  }
}
