/**
 * Why a health probe failed, in words an operator can act on, and a log of each worker's probe
 * outcome that writes a line only when it changes: the first failure (a new worker that never
 * answers is logged at once, not only after the failure threshold), a different cause (refused,
 * then 503 while loading), and the first success after failures. Each line names the URL probed,
 * the HTTP status or the kind of transport error, so a worker URL given with a `/v1` suffix
 * (probed at `/v1/health`: 404) is plain from the log.
 */
import type { Logger } from '../observability/logger.ts';
import type { ProbeResult } from './health-probe.ts';

export type ProbeFailureKind =
  | 'http_status'
  | 'timeout'
  | 'connection_refused'
  | 'dns'
  | 'connection_reset'
  | 'transport';

export interface ProbeFailure {
  /** The URL the probe asked (base URL plus --health-check-endpoint). */
  probeUrl: string;
  kind: ProbeFailureKind;
  status?: number;
  /** What the transport or the engine said. */
  detail: string;
  /** A likely fix, when the failure looks like a configuration mistake. */
  hint?: string;
}

const KINDS: readonly [RegExp, ProbeFailureKind][] = [
  [/^timeout after/, 'timeout'],
  [/ECONNREFUSED|connection refused/i, 'connection_refused'],
  [/ENOTFOUND|EAI_AGAIN|dns|failed to lookup|name resolution|name or service not known/i, 'dns'],
  [/ECONNRESET|EPIPE|connection reset|socket hang up|other side closed|UND_ERR_SOCKET/i, 'connection_reset'],
];

const KIND_TEXT: Record<ProbeFailureKind, string> = {
  http_status: 'HTTP error',
  timeout: 'timeout',
  connection_refused: 'connection refused',
  dns: 'host name not resolved',
  connection_reset: 'connection reset',
  transport: 'request failed',
};

export function probeUrlOf(baseUrl: string, endpoint: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${endpoint}`;
}

function hintFor(baseUrl: string, endpoint: string, status: number | undefined): string | undefined {
  if (status !== 404) return undefined;
  if (/\/v1\/*$/.test(baseUrl)) {
    return 'the worker URL ends in /v1: give the engine base URL without it (http://HOST:PORT)';
  }
  return `the engine has no ${endpoint}: check --health-check-endpoint and the worker URL`;
}

/** Classifies a failed probe of `baseUrl`. */
export function classifyProbeFailure(baseUrl: string, endpoint: string, result: ProbeResult): ProbeFailure {
  const detail = result.error ?? 'probe failed';
  const probeUrl = probeUrlOf(baseUrl, endpoint);
  if (result.status !== undefined) {
    const hint = hintFor(baseUrl, endpoint, result.status);
    return { probeUrl, kind: 'http_status', status: result.status, detail, ...(hint ? { hint } : {}) };
  }
  const kind = KINDS.find(([pattern]) => pattern.test(detail))?.[1] ?? 'transport';
  return { probeUrl, kind, detail };
}

/** One line for a failed probe: `HTTP 404 from GET http://h:8000/v1/health (hint)`. */
export function describeProbeFailure(baseUrl: string, endpoint: string, result: ProbeResult): string {
  const f = classifyProbeFailure(baseUrl, endpoint, result);
  const head =
    f.kind === 'http_status'
      ? `HTTP ${f.status} from GET ${f.probeUrl}`
      : `${KIND_TEXT[f.kind]}: GET ${f.probeUrl}: ${f.detail}`;
  return f.hint ? `${head} (${f.hint})` : head;
}

/** Logs probe outcomes per base URL when they change. */
export class ProbeLog {
  /** Base URL → `ok` or the failure's kind and status. */
  private readonly last = new Map<string, string>();

  constructor(private readonly logger: Pick<Logger, 'info' | 'warn'>) {}

  note(
    workers: readonly { id: string; url: string }[],
    results: ReadonlyMap<string, ProbeResult>,
    endpoint: string,
  ): void {
    const known = new Set(workers.map((w) => w.url));
    for (const url of this.last.keys()) if (!known.has(url)) this.last.delete(url);
    for (const [url, result] of results) {
      const failure = result.ok ? undefined : classifyProbeFailure(url, endpoint, result);
      const key = failure ? `${failure.kind} ${failure.status ?? ''}` : 'ok';
      const previous = this.last.get(url);
      this.last.set(url, key);
      if (previous === key || (failure === undefined && previous === undefined)) continue;
      const ids = workers.filter((w) => w.url === url).map((w) => w.id);
      this.write(ids.length === 1 ? ids[0] : ids, probeUrlOf(url, endpoint), failure);
    }
  }

  private write(worker: unknown, probeUrl: string, failure: ProbeFailure | undefined): void {
    if (failure === undefined) {
      this.logger.info('health probe ok', { worker, probe_url: probeUrl });
      return;
    }
    this.logger.warn('health probe failed', {
      worker,
      probe_url: probeUrl,
      kind: failure.kind,
      ...(failure.status === undefined ? {} : { status: failure.status }),
      error: failure.detail,
      ...(failure.hint ? { hint: failure.hint } : {}),
    });
  }
}
