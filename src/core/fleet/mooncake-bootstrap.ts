/**
 * Mooncake's bootstrap servers: each prefill engine answers `GET http://<host>:<bootstrap port,
 * default 8998>/query` with its engine id per data-parallel rank (`{"0": {"engine_id": ...}}`).
 * A decode leg names the prefill's engine (`remote_engine_id`) and bootstrap address, so the ids
 * are read when a prefill worker is first seen (startup, admin API, discovery: every health tick
 * looks for prefill workers not known yet) and again on demand when a request needs one, with
 * exponential backoff per server so a server that is down is not hammered.
 */
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import { readUpstreamBody } from '../upstream/body.ts';

export const MOONCAKE_DEFAULT_BOOTSTRAP_PORT = 8998;

/** The prefill worker fields the bootstrap lookup needs. */
export interface BootstrapTarget {
  url: string;
  role?: string;
  bootstrapPort?: number | null;
  dpRank?: number;
}

interface Entry {
  engineIds?: Map<number, string>;
  failures: number;
  /** No new query before this time (ms, wall clock) after a failure. */
  retryAt: number;
  pending?: Promise<boolean>;
  lastError?: string;
}

export interface BootstrapOptions {
  upstream: Upstream;
  clock: Clock;
  /** Per query (ms). */
  timeoutMs?: number;
  /** Backoff after failed queries: initial and cap (ms). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Told when a server's answer changes state (first success, first failure). */
  onEvent?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
}

const decoder = new TextDecoder();

/** `http://<prefill host>:<port>`: where the decode engine reaches the prefill's bootstrap server. */
export function bootstrapAddress(target: BootstrapTarget): string {
  const url = new URL(target.url);
  const port = target.bootstrapPort ?? MOONCAKE_DEFAULT_BOOTSTRAP_PORT;
  return `${url.protocol}//${url.hostname}:${port}`; // an IPv6 hostname keeps its brackets
}

/** Engine ids by DP rank from a `/query` answer; undefined when it is not that shape. */
export function parseQueryAnswer(json: unknown): Map<number, string> | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const out = new Map<number, string>();
  for (const [key, value] of Object.entries(json)) {
    const rank = Number(key);
    const id = (value as { engine_id?: unknown } | null)?.engine_id;
    if (Number.isInteger(rank) && rank >= 0 && typeof id === 'string' && id !== '') out.set(rank, id);
  }
  return out.size > 0 ? out : undefined;
}

export class MooncakeBootstrap {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: BootstrapOptions) {}

  /** The engine id of a prefill worker's DP rank, when its server answered already. */
  engineId(target: BootstrapTarget): string | undefined {
    return this.entries.get(bootstrapAddress(target))?.engineIds?.get(target.dpRank ?? 0);
  }

  /** The engine id, querying the server now when it is not known (one query per server at a time). */
  async resolve(target: BootstrapTarget): Promise<string | undefined> {
    const known = this.engineId(target);
    if (known !== undefined) return known;
    await this.query(bootstrapAddress(target), true);
    return this.engineId(target);
  }

  /** Queries every prefill server not known yet whose backoff has passed (startup, health ticks). */
  async refresh(targets: readonly BootstrapTarget[]): Promise<void> {
    const addresses = new Set<string>();
    for (const t of targets)
      if (t.role === undefined || t.role === 'prefill') addresses.add(bootstrapAddress(t));
    await Promise.all([...addresses].map((a) => this.query(a, false)));
  }

  /** True when every prefill target's server answered. */
  allKnown(targets: readonly BootstrapTarget[]): boolean {
    return targets.every(
      (t) => (t.role !== undefined && t.role !== 'prefill') || this.engineId(t) !== undefined,
    );
  }

  /** What the admin views show: each server, its engine ids or its last error. */
  status(): { address: string; engineIds?: Record<string, string>; error?: string }[] {
    return [...this.entries].map(([address, e]) => ({
      address,
      ...(e.engineIds ? { engineIds: Object.fromEntries(e.engineIds) } : {}),
      ...(e.lastError === undefined ? {} : { error: e.lastError }),
    }));
  }

  private query(address: string, force: boolean): Promise<boolean> {
    let entry = this.entries.get(address);
    if (!entry) {
      entry = { failures: 0, retryAt: 0 };
      this.entries.set(address, entry);
    }
    if (entry.engineIds && !force) return Promise.resolve(true);
    if (entry.pending) return entry.pending;
    if (!force && this.options.clock.now() < entry.retryAt) return Promise.resolve(false);
    const e = entry;
    e.pending = this.fetchIds(address).then(
      (ids) => this.answered(address, e, ids),
      (err: unknown) => this.failed(address, e, err instanceof Error ? err.message : String(err)),
    );
    return e.pending;
  }

  private async fetchIds(address: string): Promise<Map<number, string>> {
    const { upstream, clock } = this.options;
    const ctl = new AbortController();
    const timer = clock.setTimeout(() => ctl.abort('timeout'), this.options.timeoutMs ?? 5000);
    try {
      const res = await upstream({
        url: `${address}/query`,
        method: 'GET',
        headers: { accept: 'application/json' },
        body: null,
        signal: ctl.signal,
      });
      const bytes = await readUpstreamBody(res.body);
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      let json: unknown;
      try {
        json = JSON.parse(decoder.decode(bytes));
      } catch {
        throw new Error('answer is not JSON');
      }
      const ids = parseQueryAnswer(json);
      if (!ids) throw new Error('answer lists no engine_id');
      return ids;
    } finally {
      clock.clearTimeout(timer);
    }
  }

  private answered(address: string, e: Entry, ids: Map<number, string>): boolean {
    const first = e.engineIds === undefined;
    e.engineIds = ids;
    e.failures = 0;
    e.retryAt = 0;
    delete e.pending;
    delete e.lastError;
    if (first) {
      this.options.onEvent?.('info', 'mooncake bootstrap server answered', {
        bootstrap: address,
        engine_ids: Object.fromEntries(ids),
      });
    }
    return true;
  }

  private failed(address: string, e: Entry, error: string): boolean {
    const initial = this.options.initialBackoffMs ?? 500;
    const max = this.options.maxBackoffMs ?? 30_000;
    e.failures++;
    e.retryAt = this.options.clock.now() + Math.min(max, initial * 2 ** (e.failures - 1));
    delete e.pending;
    if (e.lastError !== error) {
      this.options.onEvent?.('warn', 'mooncake bootstrap query failed', {
        bootstrap: address,
        error,
        failures: e.failures,
      });
    }
    e.lastError = error;
    return false;
  }
}

/** Startup: ask every prefill worker's bootstrap server, retrying with backoff (about a minute). */
export async function warmUpBootstrap(
  bootstrap: MooncakeBootstrap,
  fleet: FleetApi,
  sleep: (ms: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  for (let round = 0; round < 8 && !signal?.aborted; round++) {
    const workers = await fleet.listWorkers();
    await bootstrap.refresh(workers);
    if (bootstrap.allKnown(workers)) return;
    await sleep(Math.min(30_000, 500 * 2 ** round));
  }
}
