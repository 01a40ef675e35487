/**
 * The Redis keys of one shared fleet, all under one prefix (default `vllm-router:`):
 *
 *   <prefix>registry            hash   worker id → SharedWorker JSON
 *   <prefix>verdicts            hash   worker id → SharedVerdict JSON (newest `at` kept)
 *   <prefix>configured          string JSON array: the worker ids the fleet's flags listed
 *   <prefix>session:<id>        hash   pool → worker id, PEXPIRE ttl (touched by requests)
 *   <prefix>load:<replica>      hash   worker id → in-flight count, PEXPIRE ttl on each report
 *   <prefix>replicas            zset   replica id scored by its last load report (ms)
 *   <prefix>events              stream entries {from, events: JSON array}, MAXLEN ~ 10000
 */

export const DEFAULT_KEY_PREFIX = 'vllm-router:';

export interface StoreKeys {
  readonly prefix: string;
  readonly registry: string;
  readonly verdicts: string;
  readonly configured: string;
  readonly replicas: string;
  readonly events: string;
  session(sessionId: string): string;
  load(replicaId: string): string;
}

export function storeKeys(prefix: string = DEFAULT_KEY_PREFIX): StoreKeys {
  return {
    prefix,
    registry: `${prefix}registry`,
    verdicts: `${prefix}verdicts`,
    configured: `${prefix}configured`,
    replicas: `${prefix}replicas`,
    events: `${prefix}events`,
    session: (sessionId) => `${prefix}session:${sessionId}`,
    load: (replicaId) => `${prefix}load:${replicaId}`,
  };
}
