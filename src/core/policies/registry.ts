/**
 * The only way to create a policy. A name the schema knows but this registry does not is a startup
 * error naming the flag: there is never a silent fallback to another policy.
 * Every instance created here counts its decisions in
 * `vllm_router_policy_decisions_total{policy,worker}` (one place for every policy).
 */

import type { CounterChild } from '../observability/metrics.ts';
import { createCacheAware } from './cache-aware.ts';
import { createConsistentHash } from './consistent-hash.ts';
import { createLeastLoaded } from './least-loaded.ts';
import type { Policy, PolicyContext, PolicyNeeds, PolicyWorker } from './policy.ts';
import { decisionsCounter } from './policy-metrics.ts';
import { createPowerOfTwo } from './power-of-two.ts';
import { createRandom } from './random.ts';
import { createRendezvousHash } from './rendezvous-hash.ts';
import { createRoundRobin } from './round-robin.ts';
import { createStickyLeastLoaded } from './sticky-least-loaded.ts';

export type PolicyFactory = (ctx: PolicyContext) => Policy;

interface PolicyEntry {
  create: PolicyFactory;
  needs: PolicyNeeds;
}

const NOTHING: PolicyNeeds = { text: false, routingKey: false, sessionId: false };
/** The hashing policies hash the routing key, else the routing text. */
const KEY_OR_TEXT: PolicyNeeds = { text: true, routingKey: true, sessionId: false };
const TEXT: PolicyNeeds = { text: true, routingKey: false, sessionId: false };
const SESSION: PolicyNeeds = { text: false, routingKey: false, sessionId: true };

const factories = new Map<string, PolicyEntry>([
  ['round_robin', { create: () => createRoundRobin(), needs: NOTHING }],
  ['random', { create: (ctx) => createRandom(ctx), needs: NOTHING }],
  ['power_of_two', { create: (ctx) => createPowerOfTwo(ctx), needs: NOTHING }],
  ['consistent_hash', { create: () => createConsistentHash(), needs: KEY_OR_TEXT }],
  ['rendezvous_hash', { create: () => createRendezvousHash(), needs: KEY_OR_TEXT }],
  ['cache_aware', { create: (ctx) => createCacheAware(ctx), needs: TEXT }],
  ['least_loaded', { create: (ctx) => createLeastLoaded(ctx), needs: SESSION }],
  ['sticky_least_loaded', { create: (ctx) => createStickyLeastLoaded(ctx), needs: SESSION }],
]);

/** What the named policies read from requests (union). */
export function policyNeeds(names: Iterable<string>): PolicyNeeds {
  const needs = { ...NOTHING };
  for (const name of names) {
    const entry = factories.get(name);
    if (!entry) continue;
    needs.text ||= entry.needs.text;
    needs.routingKey ||= entry.needs.routingKey;
    needs.sessionId ||= entry.needs.sessionId;
  }
  return needs;
}

export function registeredPolicies(): string[] {
  return [...factories.keys()];
}

export function isPolicyAvailable(name: string): boolean {
  return factories.has(name);
}

export class PolicyUnavailableError extends Error {}

export function createPolicy(name: string, ctx: PolicyContext): Policy {
  const entry = factories.get(name);
  if (!entry) {
    throw new PolicyUnavailableError(
      `policy ${name} is not available in this release (available: ${registeredPolicies().join(', ')})`,
    );
  }
  const policy = entry.create(ctx);
  const decisions = decisionsCounter(ctx.metrics);
  // One series per worker this instance picked, looked up by id (no label key joined per decision;
  // nothing removes these series, so a cached child stays the registry's).
  const series = new Map<string, CounterChild>();
  const select = policy.select.bind(policy);
  policy.select = (candidates, input) => {
    const picked: PolicyWorker | undefined = select(candidates, input);
    if (picked) {
      let child = series.get(picked.id);
      if (!child) {
        child = decisions.labels(policy.name, picked.id);
        series.set(picked.id, child);
      }
      child.inc();
    }
    return picked;
  };
  return policy;
}
