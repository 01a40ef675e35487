/** A policy context for unit tests: fake clock, seeded random, default settings, a fresh registry. */
import { defaultRouterConfig, type RouterConfig } from '../../src/core/config/schema.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import type { PolicyContext } from '../../src/core/policies/policy.ts';
import { FakeClock, seededRandom } from './fake-clock.ts';

export function testPolicyContext(
  overrides: {
    seed?: number;
    clock?: FakeClock;
    settings?: Partial<RouterConfig['policy']>;
    sll?: Partial<RouterConfig['sll']>;
    pool?: string;
  } = {},
): PolicyContext & { clock: FakeClock } {
  const defaults = defaultRouterConfig();
  return {
    clock: overrides.clock ?? new FakeClock(),
    random: seededRandom(overrides.seed ?? 42),
    settings: { ...defaults.policy, ...overrides.settings },
    sll: { ...defaults.sll, ...overrides.sll },
    metrics: new MetricsRegistry(),
    pool: overrides.pool ?? 'regular:test-model',
  };
}
