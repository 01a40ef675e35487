// Mooncake KV transfers between simulated engines: a prefill with `do_remote_decode` and a
// `transfer_id` marks the transfer ready when its answer is delivered; a decode with
// `do_remote_prefill`, a `transfer_id` and a `remote_bootstrap_addr` (with `kvWaitMs` > 0) waits
// for it by asking the prefill engine's `/sim/kv/<transfer_id>` before generating, as a real
// decode engine waits for the KV to arrive. Without the KV in time it prefills locally.

const MAX_KEPT = 10_000;

export class KvTransfers {
  private readonly ready = new Set<string>();
  private readonly waiters = new Map<string, Set<() => void>>();

  /** The prefill of `id` is done: its KV can be pulled. */
  done(id: string): void {
    this.ready.add(id);
    if (this.ready.size > MAX_KEPT) this.ready.delete(this.ready.values().next().value as string);
    for (const wake of this.waiters.get(id) ?? []) wake();
    this.waiters.delete(id);
  }

  /** Resolves true once `id` is ready, false after `ms` or when `signal` aborts. */
  wait(id: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.ready.has(id)) return Promise.resolve(true);
    return new Promise((resolve) => {
      let waiters = this.waiters.get(id);
      if (!waiters) {
        waiters = new Set();
        this.waiters.set(id, waiters);
      }
      const end = (ok: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        waiters.delete(wake);
        if (waiters.size === 0 && this.waiters.get(id) === waiters) this.waiters.delete(id);
        resolve(ok);
      };
      const wake = () => end(true);
      const onAbort = () => end(false);
      const timer = setTimeout(() => end(false), ms);
      waiters.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  clear(): void {
    this.ready.clear();
  }
}

/** Asks the prefill engine at `bootstrap` for transfer `id`; true when the KV arrived in time. */
export async function pullKv(
  bootstrap: string,
  id: string,
  ms: number,
  signal: AbortSignal,
): Promise<boolean> {
  try {
    const res = await fetch(`${bootstrap}/sim/kv/${encodeURIComponent(id)}?wait_ms=${ms}`, { signal });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}
