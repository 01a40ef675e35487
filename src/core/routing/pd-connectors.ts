/**
 * What each KV connector puts on the wire (as vLLM's connectors and its proxies expect it):
 * - NIXL: the prefill asks to keep its KV for a remote decode; the decode gets the prefill
 *   answer's `kv_transfer_params` verbatim (none: the decode prefills locally).
 * - Mooncake: the router names the transfer (`xfer-<uuid>`); the decode is told where the prefill's
 *   bootstrap server is and which engine (DP rank) holds the KV.
 * - P2P-NCCL: no params; the request id names both engines' ZMQ addresses, so the prefill engine
 *   pushes the KV to the decode engine that will receive the same id.
 */
import type { RoutedWorker } from '../contracts/fleet-api.ts';
import { bootstrapAddress } from '../fleet/mooncake-bootstrap.ts';
import type { JsonObject } from './pd-bodies.ts';

export function nixlPrefillParams(): JsonObject {
  return {
    do_remote_decode: true,
    do_remote_prefill: false,
    remote_engine_id: null,
    remote_block_ids: null,
    remote_host: null,
    remote_port: null,
  };
}

export function mooncakePrefillParams(transferId: string): JsonObject {
  return { do_remote_decode: true, do_remote_prefill: false, transfer_id: transferId };
}

export function mooncakeDecodeParams(
  transferId: string,
  prefill: RoutedWorker,
  engineId: string,
): JsonObject {
  return {
    do_remote_decode: false,
    do_remote_prefill: true,
    transfer_id: transferId,
    remote_bootstrap_addr: bootstrapAddress(prefill),
    remote_engine_id: engineId,
  };
}

/** A fresh Mooncake transfer id. */
export function transferId(newId: () => string): string {
  return `xfer-${newId()}`;
}

/** `host:port` of a worker URL: the ZMQ address to name when a worker registered none. */
function hostPortOf(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/** The P2P-NCCL request id both legs carry: `___prefill_addr_<P>___decode_addr_<D>_<uuid hex>`. */
export function p2pRequestId(
  prefill: RoutedWorker,
  decode: RoutedWorker,
  hex: string,
  zmqAddress: ((url: string) => string | undefined) | undefined,
): string {
  const p = zmqAddress?.(prefill.url) ?? hostPortOf(prefill.url);
  const d = zmqAddress?.(decode.url) ?? hostPortOf(decode.url);
  return `___prefill_addr_${p}___decode_addr_${d}_${hex}`;
}

/** 32 hex digits from a UUID source. */
export function uuidHex(newId: () => string): string {
  return newId().replaceAll('-', '');
}
