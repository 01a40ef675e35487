/** Prefill/decode settings and helpers, fixed at startup (the pipeline context's `pd`). */
import type { MooncakeBootstrap } from '../fleet/mooncake-bootstrap.ts';
import type { PdInstruments } from './pd-metrics.ts';

export type PdConnector = 'nixl' | 'mooncake' | 'p2p_nccl';

/** Prefill/decode settings and helpers, fixed at startup. */
export interface PdContext {
  connector: PdConnector;
  /** Mooncake: send the decode leg without waiting for the prefill's answer (vLLM's own proxy does). */
  concurrent: boolean;
  /** How long a prefill engine keeps the KV blocks for its decode (ms): a decode not started by then runs a fresh prefill. */
  kvHoldMs: number;
  bootstrap?: MooncakeBootstrap;
  /** P2P-NCCL: the ZMQ address a worker registered with (by its HTTP URL). */
  zmqAddress?: (url: string) => string | undefined;
  instruments: PdInstruments;
}
