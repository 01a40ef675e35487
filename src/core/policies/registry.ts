/**
 * The only way to create a policy. A name the schema knows but this registry does not is a startup
 * error naming the flag: there is never a silent fallback to another policy.
 */
import type { Policy, PolicyContext, PolicyNeeds } from './policy.ts';
import { createRandom } from './random.ts';
import { createRoundRobin } from './round-robin.ts';

export type PolicyFactory = (ctx: PolicyContext) => Policy;

interface PolicyEntry {
  create: PolicyFactory;
  needs: PolicyNeeds;
}

const NOTHING: PolicyNeeds = { text: false, routingKey: false, sessionId: false };

const factories = new Map<string, PolicyEntry>([
  ['round_robin', { create: () => createRoundRobin(), needs: NOTHING }],
  ['random', { create: (ctx) => createRandom(ctx), needs: NOTHING }],
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
  return entry.create(ctx);
}
