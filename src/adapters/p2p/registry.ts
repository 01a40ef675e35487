/**
 * P2P-NCCL worker registration (--vllm-discovery-address; Node and Deno adapters): engines running vLLM's
 * P2pNcclConnector send a msgpack map `{type: "P"|"D", http_address: "host:port", zmq_address:
 * "host:port"}` from a DEALER socket every 3 s. The first registration of an HTTP address adds the
 * worker once (one per --intra-node-data-parallel-size rank) and has it probed at once; refreshes
 * only mark it seen, so it keeps its load, breaker and policy state. A registration not refreshed
 * for 5 s is removed (the worker drains: requests in flight finish). Workers the registry did not
 * add (--prefill/--decode, admin API) are never removed; their ZMQ address is still used.
 */
import { hostMatcher } from '../../core/config/host-patterns.ts';
import type { RouterConfig } from '../../core/config/schema.ts';
import { type Clock, type TimerHandle, watchdog } from '../../core/contracts/runtime.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import { expandDataParallel } from '../../core/fleet/workers.ts';
import type { Logger } from '../../core/observability/logger.ts';
import type { Counter, Gauge, MetricsRegistry } from '../../core/observability/metrics.ts';
import {
  type BoundRouterSocket,
  bindRouterSocket,
  type P2pRegistration,
  type P2pRole,
  parseRegistration,
} from './wire.ts';

/** vLLM's proxy drops an engine silent for 5 s (engines refresh every 3 s). */
export const P2P_EXPIRY_MS = 5000;
export const P2P_SWEEP_MS = 1000;

export type RegistrationResult = 'new' | 'refresh' | 'invalid';

/** What the registry needs of the router, attached once the router is built. */
export interface P2pRouterSide {
  fleet: Pick<Fleet, 'addWorker' | 'removeWorker' | 'listWorkers' | 'getWorker'>;
  logger: Logger;
  metrics: MetricsRegistry;
  clock: Clock;
  refreshWorkers(only?: readonly string[]): Promise<void>;
}

export interface P2pRegistryOptions {
  /** A registration not refreshed for this long is removed (default 5000; tests may shorten it). */
  expiryMs?: number;
  /** How often expiry is checked (default 1000). */
  sweepMs?: number;
  /** Workers added per registration: `--intra-node-data-parallel-size` (default 1). */
  dpSize?: number;
  /** `--worker-url-allowlist`: registrations from other hosts are refused (empty: any host). */
  allowlist?: readonly string[];
  /** Poll the socket every this many ms instead of waiting on the addon (Deno: see RouterSocketOptions). */
  pollMs?: number;
}

interface Entry extends P2pRegistration {
  url: string;
  lastSeen: number;
  /** added: by this registry (`ids`); static: configured otherwise; pending: waits for its old self to drain. */
  state: 'added' | 'static' | 'pending';
  ids: string[];
}

interface Attached extends P2pRouterSide {
  results: Counter;
  registered: Gauge;
}

export class P2pRegistry {
  private readonly entries = new Map<string, Entry>();
  /** URLs this registry removed that still drain (a re-registration waits for them). */
  private readonly draining = new Map<string, string[]>();
  private readonly expiryMs: number;
  private readonly sweepMs: number;
  private readonly dpSize: number;
  private readonly allowed: ((host: string) => boolean) | undefined;
  private readonly pollMs: number | undefined;
  private side: Attached | undefined;
  private timer: TimerHandle | undefined;
  private socket: BoundRouterSocket | undefined;
  private rejecting = 0;
  private closed = false;

  constructor(options: P2pRegistryOptions = {}) {
    this.expiryMs = options.expiryMs ?? P2P_EXPIRY_MS;
    this.sweepMs = options.sweepMs ?? P2P_SWEEP_MS;
    this.dpSize = options.dpSize ?? 1;
    this.pollMs = options.pollMs;
    const allowlist = options.allowlist ?? [];
    this.allowed = allowlist.length > 0 ? hostMatcher(allowlist) : undefined;
  }

  /** Connects the registry to the router it feeds and starts the expiry sweep. */
  attach(side: P2pRouterSide): void {
    const results = side.metrics.counter(
      'vllm_router_pd_registrations_total',
      'P2P-NCCL registration messages received over ZMQ, by result (new worker, refresh, invalid)',
      ['result'],
    );
    const registered = side.metrics.gauge(
      'vllm_router_pd_registered_workers',
      'P2P-NCCL workers currently registered over ZMQ, by role',
      ['role'],
    );
    for (const r of ['new', 'refresh', 'invalid']) results.labels(r);
    this.side = { ...side, results, registered };
    this.updateGauge();
    this.arm();
  }

  /** The ZMQ address a registered worker gave, by its base URL (`http://<http_address>`). */
  zmqAddress(url: string): string | undefined {
    return this.entries.get(url)?.zmqAddress;
  }

  /** The socket's bound address (`HOST:PORT`), once bound. */
  get address(): string | undefined {
    return this.socket?.address;
  }

  /** Binds the ROUTER socket; rejects with a startup error naming --vllm-discovery-address. */
  async bind(address: string): Promise<string> {
    const side = this.need();
    this.socket = await bindRouterSocket(
      address,
      (frames) => void this.onMessage(frames),
      (err, fatal) =>
        fatal
          ? side.logger.error('P2P registration socket failed: no more registrations', { error: err })
          : side.logger.error('P2P registration handling failed', { error: err }),
      this.pollMs === undefined ? {} : { pollMs: this.pollMs },
    );
    side.logger.info('P2P-NCCL registration socket bound', { address: this.socket.address });
    return this.socket.address;
  }

  /** One ROUTER message: `[identity, payload]` (the payload is the last frame). */
  onMessage(frames: readonly Uint8Array[]): RegistrationResult {
    const payload = frames.length >= 2 ? frames[frames.length - 1] : undefined;
    return this.handleRegistration(payload ?? new Uint8Array());
  }

  handleRegistration(payload: Uint8Array): RegistrationResult {
    const side = this.need();
    const parsed = parseRegistration(payload, this.allowed);
    if (!parsed.ok) {
      side.results.labels('invalid').inc();
      if (this.rejecting++ === 0) {
        side.logger.warn('P2P registration rejected; further ones are only counted until a valid one', {
          reason: parsed.reason,
        });
      }
      return 'invalid';
    }
    if (this.rejecting > 0) {
      side.logger.info('P2P registrations valid again', { rejected: this.rejecting });
      this.rejecting = 0;
    }
    const result = this.register(parsed.value, side);
    side.results.labels(result).inc();
    return result;
  }

  private register(reg: P2pRegistration, side: Attached): RegistrationResult {
    const url = `http://${reg.httpAddress}`;
    const now = side.clock.now();
    const known = this.entries.get(url);
    if (known && known.role === reg.role) {
      known.lastSeen = now;
      if (known.zmqAddress !== reg.zmqAddress) {
        side.logger.info('P2P worker changed its ZMQ address', {
          url,
          from: known.zmqAddress,
          to: reg.zmqAddress,
        });
        known.zmqAddress = reg.zmqAddress;
      }
      if (known.state !== 'added' || known.ids.some((id) => !side.fleet.getWorker(id))) this.tryAdd(known);
      return 'refresh';
    }
    if (known) {
      side.logger.info('P2P worker changed its role: re-adding it', { url, from: known.role, to: reg.role });
      this.drop(known);
    }
    const entry: Entry = { ...reg, url, lastSeen: now, state: 'pending', ids: [] };
    this.entries.set(url, entry);
    this.tryAdd(entry);
    if (entry.state === 'static') {
      const fields = { url, role: reg.role, zmq_address: reg.zmqAddress };
      side.logger.info('P2P registration for a worker not added by discovery: kept as configured', fields);
    }
    this.updateGauge();
    return 'new';
  }

  /** Adds the entry's workers unless its URL is in the fleet already (configured, or draining). */
  private tryAdd(entry: Entry): void {
    const side = this.need();
    if (side.fleet.listWorkers().some((w) => w.url === entry.url)) {
      entry.state = this.draining.has(entry.url) ? 'pending' : 'static';
      entry.ids = [];
      return;
    }
    const specs = expandDataParallel({ url: entry.url, role: entry.role }, this.dpSize);
    entry.ids = specs.map((spec) => side.fleet.addWorker(spec).id);
    entry.state = 'added';
    side.logger.info('P2P worker registered', {
      url: entry.url,
      role: entry.role,
      zmq_address: entry.zmqAddress,
      workers: entry.ids,
    });
    side
      .refreshWorkers([entry.url])
      .catch((err: unknown) =>
        side.logger.warn('probing a registered P2P worker failed', { url: entry.url, error: err }),
      );
  }

  /** Forgets an entry; removes the workers it added (they drain their requests in flight). */
  private drop(entry: Entry): boolean {
    const side = this.need();
    this.entries.delete(entry.url);
    if (entry.state !== 'added') return false;
    for (const id of entry.ids) side.fleet.removeWorker(id);
    const left = entry.ids.filter((id) => side.fleet.getWorker(id));
    if (left.length > 0) this.draining.set(entry.url, left);
    return true;
  }

  /** Removes registrations not refreshed within the expiry; retries the ones waiting for a drain. */
  sweep(): void {
    const side = this.need();
    const now = side.clock.now();
    for (const [url, ids] of this.draining) {
      if (ids.every((id) => !side.fleet.getWorker(id))) this.draining.delete(url);
    }
    let changed = false;
    for (const entry of [...this.entries.values()]) {
      const silentMs = now - entry.lastSeen;
      if (silentMs < this.expiryMs) {
        if (entry.state === 'pending') this.tryAdd(entry);
        continue;
      }
      const removed = this.drop(entry);
      changed = true;
      const fields = { url: entry.url, role: entry.role, zmq_address: entry.zmqAddress, silent_ms: silentMs };
      if (removed) side.logger.warn('P2P worker registration expired: worker removed', fields);
      else side.logger.info('P2P registration expired (worker not added by discovery: kept)', fields);
    }
    if (changed) this.updateGauge();
  }

  /** Closes the socket and stops the sweep; registered workers stay in the fleet. */
  async close(): Promise<void> {
    if (this.timer !== undefined) this.side?.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.closed = true;
    const socket = this.socket;
    this.socket = undefined;
    socket?.close();
    await socket?.done;
  }

  private arm(): void {
    const side = this.need();
    if (this.closed) return;
    const tick = () => {
      try {
        this.sweep();
      } catch (err) {
        side.logger.error('P2P registration sweep failed', { error: err });
      }
      this.arm();
    };
    this.timer = side.clock.setTimeout(watchdog(tick), this.sweepMs);
    (this.timer as { unref?: () => void } | undefined)?.unref?.();
  }

  private updateGauge(): void {
    const side = this.need();
    const counts: Record<P2pRole, number> = { prefill: 0, decode: 0 };
    for (const e of this.entries.values()) counts[e.role]++;
    for (const role of ['prefill', 'decode'] as const) side.registered.labels(role).set(counts[role]);
  }

  private need(): Attached {
    if (!this.side) throw new Error('P2pRegistry used before attach()');
    return this.side;
  }
}

/** The registry a config asks for (--vllm-discovery-address), not attached yet. */
export function p2pRegistryFor(
  config: RouterConfig,
  options: P2pRegistryOptions = {},
): P2pRegistry | undefined {
  if (config.pd.discoveryAddress === undefined) return undefined;
  const { dpSize, urlAllowlist: allowlist } = config.workers;
  return new P2pRegistry({ dpSize, allowlist, ...options });
}
