/**
 * A P2P-NCCL engine for tests: a simulated engine (startSimEngine) that registers itself with a
 * router's discovery socket the way vLLM's P2pNcclConnector does: a DEALER socket (routing id =
 * its ZMQ address) sending the msgpack map `{type, http_address, zmq_address}` at once and then
 * every `intervalMs` (vLLM: 3000).
 */
import { encode } from '@msgpack/msgpack';
import { Dealer } from 'zeromq';
import { type RunningSimEngine, type StartSimOptions, startSimEngine } from '../../src/sim/node.ts';

export interface Registration {
  /** The ZMQ address announced (the request ids name it). */
  zmqAddress: string;
  /** Messages sent so far. */
  readonly sent: number;
  /** Sends one more message now (a registration, or `payload` as given). */
  send(payload?: Uint8Array): Promise<void>;
  /** Stops registering (the router expires the worker) and closes the socket. */
  stop(): void;
}

export interface RegistrationOptions {
  /** The router's --vllm-discovery-address (`HOST:PORT`). */
  discovery: string;
  type: 'P' | 'D';
  /** `host:port` of the engine's HTTP server. */
  httpAddress: string;
  zmqAddress: string;
  /** Between messages (default 3000, as vLLM). */
  intervalMs?: number;
}

/** Registers `httpAddress` until stopped. */
export function startRegistration(options: RegistrationOptions): Registration {
  const { discovery, type, httpAddress, zmqAddress, intervalMs = 3000 } = options;
  const dealer = new Dealer({ routingId: zmqAddress, linger: 0 });
  dealer.connect(`tcp://${discovery}`);
  const message = encode({ type, http_address: httpAddress, zmq_address: zmqAddress });
  let sent = 0;
  // zeromq allows one send at a time per socket: sends queue behind each other.
  let queue: Promise<void> = Promise.resolve();
  const send = (payload: Uint8Array = message) => {
    queue = queue.then(async () => {
      if (dealer.closed) return;
      await dealer.send(payload);
      sent++;
    });
    return queue;
  };
  void send().catch(() => {});
  const timer = setInterval(() => void send().catch(() => {}), intervalMs);
  return {
    zmqAddress,
    get sent() {
      return sent;
    },
    send,
    stop() {
      clearInterval(timer);
      if (!dealer.closed) dealer.close();
    },
  };
}

export interface ZmqEngine {
  sim: RunningSimEngine;
  registration: Registration;
  /** Stops registering and closes the engine. */
  close(): Promise<void>;
}

/**
 * Starts a simulated engine on loopback and registers it. Its ZMQ address defaults to
 * `127.0.0.2:<http port>`: distinct from its HTTP address, so a test sees which one a request id names.
 */
export async function startZmqEngine(
  options: Omit<RegistrationOptions, 'httpAddress' | 'zmqAddress'> & {
    zmqAddress?: string;
    engine?: StartSimOptions;
  },
): Promise<ZmqEngine> {
  const sim = await startSimEngine({ ...options.engine, host: '127.0.0.1', port: 0 });
  const registration = startRegistration({
    ...options,
    httpAddress: `127.0.0.1:${sim.port}`,
    zmqAddress: options.zmqAddress ?? `127.0.0.2:${sim.port}`,
  });
  return {
    sim,
    registration,
    async close() {
      registration.stop();
      await sim.close();
    },
  };
}
