/**
 * Helpers of the fleet resilience tests: a fleet built from the config (default flags, so the
 * default cache_aware policy) on a fake clock and a seeded random, prompts that share a long system
 * prompt, and a closed-loop traffic simulation through Fleet.route / Fleet.settle.
 */
import { parseRouterConfig, type RouterConfigInput } from '../../../src/core/config/schema.ts';
import type { AttemptOutcome, RouteInput, RouteResult } from '../../../src/core/contracts/fleet-api.ts';
import type { Fleet } from '../../../src/core/fleet/fleet.ts';
import { createFleetFromConfig } from '../../../src/core/fleet/from-config.ts';
import { MetricsRegistry } from '../../../src/core/observability/metrics.ts';
import { FakeClock, seededRandom } from '../../support/fake-clock.ts';

export const A = 'http://127.0.0.1:8001';
export const B = 'http://127.0.0.1:8002';
export const C = 'http://127.0.0.1:8003';
export const D = 'http://127.0.0.1:8004';

/** A 600-character system prompt, as a chat's routing text starts. */
export const SYSTEM =
  `You are a careful assistant for an online bookshop. ${'Answer politely, cite the catalogue, never invent titles or prices, and keep every answer short. '.repeat(7)}`.slice(
    0,
    600,
  );

/** A chat's routing text: the shared system prompt, then a distinct user turn. */
export const prompt = (i: number): string =>
  `${SYSTEM}\nuser: question ${i}: what do you recommend for reader ${i * 7919}?`;

/** A fleet of `urls` from the config (default flags unless `config` says otherwise), all healthy. */
export function makeFleet(urls: string[], config: RouterConfigInput = {}, seed = 1) {
  const clock = new FakeClock();
  const parsed = parseRouterConfig({ ...config, workers: { ...config.workers, urls } });
  const fleet = createFleetFromConfig(parsed, {
    clock,
    random: seededRandom(seed),
    metrics: new MetricsRegistry(),
  });
  fleet.recordProbes(urls.map((url) => ({ url, ok: true })));
  return { fleet, clock, config: parsed };
}

export function routed(result: RouteResult) {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result;
}

/** Routes and settles at once; returns the worker. */
export function once(
  fleet: Fleet,
  input: RouteInput,
  outcome: AttemptOutcome = { kind: 'success', status: 200 },
) {
  const r = routed(fleet.route(input));
  fleet.settle(r.lease, outcome);
  return r.worker.id;
}

export interface Answer {
  /** How long the worker takes to answer (ms on the fake clock). */
  ms: number;
  outcome: AttemptOutcome;
}

/**
 * Closed-loop traffic: `concurrency` clients each send a request as soon as the previous one ended,
 * `total` requests in all. Each is routed, held for the answer's `ms` on the fake clock, then
 * settled with its outcome (a `firstByteMs` of `ms` is added to successes). Returns the worker of
 * every request, in order, and the routes refused.
 */
export function simulate(
  fleet: Fleet,
  clock: FakeClock,
  options: {
    total: number;
    concurrency: number;
    input: (i: number) => RouteInput;
    answer: (worker: string, i: number) => Answer;
  },
): { workers: string[]; refused: number } {
  const pending: { at: number; lease: number; outcome: AttemptOutcome }[] = [];
  const workers: string[] = [];
  let refused = 0;
  let next = 0;
  const start = () => {
    const i = next++;
    const input = options.input(i);
    const r = fleet.route(input);
    if (!r.ok) {
      refused++;
      return;
    }
    workers.push(r.worker.id);
    const { ms, outcome } = options.answer(r.worker.id, i);
    const settled = outcome.kind === 'success' ? { firstByteMs: ms, ...outcome } : outcome;
    pending.push({ at: clock.now() + ms, lease: r.lease, outcome: settled });
  };
  for (let c = 0; c < options.concurrency && next < options.total; c++) start();
  while (pending.length > 0) {
    pending.sort((x, y) => x.at - y.at);
    const event = pending.shift()!;
    clock.advance(Math.max(0, event.at - clock.now()));
    fleet.settle(event.lease, event.outcome);
    if (next < options.total) start();
  }
  return { workers, refused };
}

export function share(workers: readonly string[], id: string): number {
  return workers.filter((w) => w === id).length / workers.length;
}
