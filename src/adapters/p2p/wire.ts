/**
 * The wire side of P2P-NCCL registration (--vllm-discovery-address): the registration message
 * (msgpack `{type: "P"|"D", http_address, zmq_address}`, as vLLM's P2pNcclConnector sends it) and
 * a ROUTER socket bound to `tcp://HOST:PORT` that hands every message it receives (`[identity,
 * payload]`: engines send from a DEALER) to a callback. The `zeromq` native addon is loaded only
 * here, on first bind, so a router that does not use P2P registration never needs it.
 */
import { decode } from '@msgpack/msgpack';
import type { Router } from 'zeromq';
import { ConfigError } from '../../core/config/errors.ts';
import { workerUrlProblem } from '../../core/http/worker-url-rules.ts';

const FLAG = '--vllm-discovery-address';

const MAX_PAYLOAD_BYTES = 4096;
const ADDRESS = /^[^\s/@?#]+:\d{1,5}$/;

export type P2pRole = 'prefill' | 'decode';

export interface P2pRegistration {
  role: P2pRole;
  httpAddress: string;
  zmqAddress: string;
}

export type ParsedRegistration = { ok: true; value: P2pRegistration } | { ok: false; reason: string };

/** `host:port`, usable as the base of a worker URL (`http://host:port`). */
function isAddress(v: unknown): v is string {
  if (typeof v !== 'string' || !ADDRESS.test(v) || workerUrlProblem(`http://${v}`) !== undefined)
    return false;
  return Number(v.slice(v.lastIndexOf(':') + 1)) <= 65535;
}

/**
 * Decodes and checks one registration payload; never throws. `allowed` (--worker-url-allowlist)
 * refuses an HTTP address on another host.
 */
export function parseRegistration(
  payload: Uint8Array,
  allowed?: (host: string) => boolean,
): ParsedRegistration {
  if (payload.byteLength > MAX_PAYLOAD_BYTES) return { ok: false, reason: 'payload too large' };
  let data: unknown;
  try {
    data = decode(payload);
  } catch {
    return { ok: false, reason: 'not msgpack' };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { ok: false, reason: 'not a msgpack map' };
  }
  const { type, http_address: httpAddress, zmq_address: zmqAddress } = data as Record<string, unknown>;
  if (type !== 'P' && type !== 'D') return { ok: false, reason: 'type must be "P" or "D"' };
  if (!isAddress(httpAddress)) return { ok: false, reason: 'http_address must be host:port' };
  if (!isAddress(zmqAddress)) return { ok: false, reason: 'zmq_address must be host:port' };
  const host = new URL(`http://${httpAddress}`).hostname;
  if (allowed && !allowed(host))
    return { ok: false, reason: `host ${host} is not in --worker-url-allowlist` };
  return { ok: true, value: { role: type === 'P' ? 'prefill' : 'decode', httpAddress, zmqAddress } };
}

/** Registrations are a few dozen bytes: a bigger message is refused by the socket itself. */
const MAX_MESSAGE_BYTES = 64 * 1024;

export interface BoundRouterSocket {
  /** `HOST:PORT` as bound (port 0 resolved to the port the system chose). */
  address: string;
  /** Resolves once the receive loop has ended (after `close`, or when the socket failed). */
  done: Promise<void>;
  close(): void;
}

function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** The startup error (exit 2, one line naming the flag) for an address the socket cannot bind. */
export function discoveryBindError(address: string, err: unknown): ConfigError {
  const detail = err instanceof Error ? err.message : String(err);
  const reason = (() => {
    switch (errorCode(err)) {
      case 'EADDRINUSE':
        return 'address already in use';
      case 'EACCES':
      case 'EPERM':
        return 'no permission to bind it (ports below 1024 need privileges)';
      case 'EADDRNOTAVAIL':
      case 'ENODEV':
        return 'not an address of this machine';
      default:
        return `cannot bind it: ${detail}`;
    }
  })();
  return new ConfigError(`${FLAG} ${address}: ${reason}`, { flag: FLAG, cause: err });
}

async function loadZeromq(): Promise<typeof import('zeromq')> {
  try {
    return await import('zeromq');
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`${FLAG}: the zeromq native addon could not be loaded (${detail})`, {
      flag: FLAG,
      cause: err,
    });
  }
}

export interface RouterSocketOptions {
  /**
   * Read with non-blocking receives every `pollMs` instead of waiting on the addon's libuv poll
   * handle. For Deno: its libuv shim can miss the edge-triggered wake-up of a ZMQ socket, and a
   * waiting receive then never resolves (the addon's timers crash there, so receive timeouts are no way out).
   */
  pollMs?: number;
}

type Deliver = (frames: Uint8Array[]) => void;
type ReportError = (err: unknown, fatal: boolean) => void;

/** Waits on the addon for each message (Node). */
async function waitLoop(socket: Router, deliver: Deliver, onError: ReportError): Promise<void> {
  while (!socket.closed) {
    let frames: Uint8Array[];
    try {
      frames = await socket.receive();
    } catch (err) {
      if (!socket.closed) onError(err, true);
      return;
    }
    deliver(frames);
  }
}

/** Drains the socket with non-blocking receives (receiveTimeout 0: EAGAIN when empty), then sleeps. */
async function pollLoop(
  socket: Router,
  pollMs: number,
  sleep: (ms: number) => Promise<void>,
  deliver: Deliver,
  onError: ReportError,
): Promise<void> {
  while (!socket.closed) {
    let frames: Uint8Array[];
    try {
      frames = await socket.receive();
    } catch (err) {
      if (socket.closed) return;
      if (errorCode(err) !== 'EAGAIN') {
        onError(err, true);
        return;
      }
      await sleep(pollMs);
      continue;
    }
    deliver(frames);
  }
}

/**
 * Binds a ROUTER socket to `address` (`HOST:PORT`, `[IPv6]:PORT`; port 0 picks one) and calls
 * `onMessage` with the frames of each message until `close`. A failing callback is reported to
 * `onError` and the loop goes on; a failing socket is reported and ends the loop.
 */
export async function bindRouterSocket(
  address: string,
  onMessage: (frames: Uint8Array[]) => void,
  onError: ReportError,
  options: RouterSocketOptions = {},
): Promise<BoundRouterSocket> {
  const zmq = await loadZeromq();
  const { pollMs } = options;
  const socket = new zmq.Router({
    ipv6: address.startsWith('['),
    linger: 0,
    maxMessageSize: MAX_MESSAGE_BYTES,
    ...(pollMs === undefined ? {} : { receiveTimeout: 0 }),
  });
  try {
    await socket.bind(`tcp://${address}`);
  } catch (err) {
    socket.close();
    throw discoveryBindError(address, err);
  }
  const bound = (socket.lastEndpoint ?? `tcp://${address}`).replace(/^tcp:\/\//, '');
  const deliver: Deliver = (frames) => {
    try {
      onMessage(frames);
    } catch (err) {
      onError(err, false);
    }
  };
  // The poll loop's sleep ends at once on close, so `done` does not wait out a poll interval.
  let wake: (() => void) | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    });
  const done =
    pollMs === undefined
      ? waitLoop(socket, deliver, onError)
      : pollLoop(socket, pollMs, sleep, deliver, onError);
  return {
    address: bound,
    done,
    close() {
      if (!socket.closed) socket.close();
      clearTimeout(timer);
      wake?.();
    },
  };
}
