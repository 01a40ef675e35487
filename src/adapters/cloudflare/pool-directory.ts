/**
 * The main object's list of its model pools' objects: every pool object that pulled the registry,
 * kept in SQLite (a restarted main object still pushes to them), and the calls it fans out to all
 * of them (registry pushes, finished sessions, loads, metrics). A pool that fails or does not
 * answer within CALL_TIMEOUT_MS is left out of that round and logged; it catches up by pulling.
 */
import type { Logger } from '../../core/observability/logger.ts';
import type { PoolObjectRpc } from './rpc.ts';
import type { StateStore } from './state-store.ts';

const CALL_TIMEOUT_MS = 2_000;
const KEY = 'pools';

export class PoolDirectory {
  private readonly names: Set<string>;

  constructor(
    private readonly namespace: DurableObjectNamespace<PoolObjectRpc>,
    private readonly store: StateStore,
    private readonly logger: Logger,
  ) {
    this.names = new Set(store.load<string[]>(KEY) ?? []);
  }

  /** The pool objects' names. */
  get all(): readonly string[] {
    return [...this.names];
  }

  register(name: string): void {
    if (this.names.has(name)) return;
    this.names.add(name);
    this.store.save(KEY, [...this.names]);
  }

  /** A stub for one call (stubs are not kept across calls). */
  stub(name: string): DurableObjectStub<PoolObjectRpc> {
    return this.namespace.get(this.namespace.idFromName(name));
  }

  /** Calls every pool object; the answers of those that answered in time. */
  async each<T>(what: string, call: (pool: DurableObjectStub<PoolObjectRpc>) => Promise<T>): Promise<T[]> {
    const names = this.all;
    const settled = await Promise.allSettled(names.map((name) => withTimeout(call(this.stub(name)))));
    const answers: T[] = [];
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') answers.push(r.value);
      else this.logger.warn(`pool object did not answer (${what})`, { pool: names[i], error: r.reason });
    });
    return answers;
  }
}

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CALL_TIMEOUT_MS} ms`)), CALL_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
