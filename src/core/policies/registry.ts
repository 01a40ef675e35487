/**
 * The only way to create a policy. A name the schema knows but this registry does not is a startup
 * error naming the flag: there is never a silent fallback to another policy.
 */
import type { Policy, PolicyContext } from './policy.ts';
import { createRandom } from './random.ts';
import { createRoundRobin } from './round-robin.ts';

export type PolicyFactory = (ctx: PolicyContext) => Policy;

const factories = new Map<string, PolicyFactory>([
  ['round_robin', () => createRoundRobin()],
  ['random', (ctx) => createRandom(ctx)],
]);

export function registeredPolicies(): string[] {
  return [...factories.keys()];
}

export function isPolicyAvailable(name: string): boolean {
  return factories.has(name);
}

export class PolicyUnavailableError extends Error {}

export function createPolicy(name: string, ctx: PolicyContext): Policy {
  const factory = factories.get(name);
  if (!factory) {
    throw new PolicyUnavailableError(
      `policy ${name} is not available in this release (available: ${registeredPolicies().join(', ')})`,
    );
  }
  return factory(ctx);
}
