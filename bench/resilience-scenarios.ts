/**
 * The scenarios of the resilience benchmark (issue 11) and how each one runs: simulated engines on
 * 127.0.0.1, the router in-process with the schema defaults plus the engines' URLs, a closed-loop
 * client, and the engines' own request logs as the count of upstream attempts.
 */
import { startNodeRouter } from '../src/adapters/node/server.ts';
import { parseRouterConfig } from '../src/core/config/schema.ts';
import { type RunningSimEngine, type StartSimOptions, startSimEngine } from '../src/sim/node.ts';
import { chatBody, type Result, runLoad, send } from './resilience-client.ts';
import { oversizedUploads } from './resilience-upload.ts';

export interface Settings {
  requests: number;
  concurrency: number;
  timeoutMs: number;
  tokens: number;
  ttftMs: number;
  itlMs: number;
  /** Unset: the schema default (cache_aware). */
  policy: string | undefined;
  uploads: number;
  uploadConcurrency: number;
  uploadLimitBytes: number;
  blipDurationMs: number;
}

export interface FaultScenario {
  key: string;
  fault: string;
  /** Engine A's options on top of the healthy ones; null: both engines healthy. */
  faulty: StartSimOptions | null;
  /** A separate client streams uploads larger than --max-payload-size during the run. */
  uploads?: boolean;
}

/** Engine A (the faulty one) is listed first: it is the router's first pick on an empty tree. */
export const FAULTS: readonly FaultScenario[] = [
  {
    key: 'hang',
    fault: 'accepts the connection, never answers (its /health still 200)',
    faulty: { failure: { mode: 'hang' } },
  },
  { key: 'stall', fault: 'sends headers, then stalls', faulty: { failure: { mode: 'stall' } } },
  {
    key: '429',
    fault: 'answers 429 + `Retry-After: 1`',
    faulty: { failure: { mode: 'status', status: 429, retryAfter: '1' } },
  },
  {
    key: '503',
    fault: '503 for 30 % of requests',
    faulty: { failure: { mode: 'status', status: 503, rate: 0.3 } },
  },
  { key: 'slow', fault: 'TTFT 2 s (B: 5 ms)', faulty: { ttftMs: 2000 } },
  {
    key: 'cut',
    fault: '200 with a content-length, connection cut mid-body',
    faulty: { failure: { mode: 'midstream' } },
  },
  {
    key: 'upload',
    fault: 'another client streams uploads larger than `--max-payload-size` (both engines healthy)',
    faulty: null,
    uploads: true,
  },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each engine's circuit as the router's admin API reports it (GET /workers), in engine order. */
async function circuits(routerUrl: string, engines: readonly RunningSimEngine[]): Promise<string[]> {
  try {
    const res = await fetch(`${routerUrl}/workers`, { signal: AbortSignal.timeout(5000) });
    const { workers } = (await res.json()) as { workers: Array<{ url: string; circuit: string }> };
    return engines.map((e) => workers.find((w) => w.url === e.url)?.circuit ?? '?');
  } catch {
    return engines.map(() => '?');
  }
}

/**
 * Starts the engines and the router, runs `load`, reads the circuits, then stops the router
 * (cutting whatever is still in flight) and the engines. Answers the load's value, the circuits at
 * the end and the engines (their logs stay readable).
 */
async function withStack<T>(
  engineOptions: readonly StartSimOptions[],
  s: Settings,
  server: Record<string, unknown>,
  load: (routerUrl: string) => Promise<T>,
): Promise<{ value: T; engines: RunningSimEngine[]; circuits: string[] }> {
  const engines: RunningSimEngine[] = [];
  try {
    for (const [i, options] of engineOptions.entries()) {
      const id = String.fromCharCode(65 + i);
      engines.push(await startSimEngine({ id, seed: 42 + i, host: '127.0.0.1', port: 0, ...options }));
    }
    const config = parseRouterConfig({
      server: { host: '127.0.0.1', port: 0, ...server },
      metrics: { host: '127.0.0.1', port: 0 },
      workers: { urls: engines.map((e) => e.url) },
      ...(s.policy ? { policy: { name: s.policy } } : {}),
    });
    const router = await startNodeRouter(config, { logSink: () => {}, metricsListener: false });
    try {
      const value = await load(router.url);
      return { value, engines, circuits: await circuits(router.url, engines) };
    } finally {
      await router.close(0);
      await sleep(50); // let the engines see the cut connections and settle their log entries
    }
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}

function healthy(s: Settings): StartSimOptions {
  return { tokens: s.tokens, ttftMs: s.ttftMs, itlMs: s.itlMs };
}

/** The engines' inference log entries of one run, by client request id. */
function attemptsById(engine: RunningSimEngine, prefix: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const e of engine.engine.log) {
    const id = e.headers['x-request-id'];
    if (!id?.startsWith(prefix)) continue;
    const list = out.get(id) ?? [];
    list.push(e.status ?? 0);
    out.set(id, list);
  }
  return out;
}

export interface Tally {
  attempts: number;
  /** Distinct client requests that reached engine A, and the attempts A received. */
  onFaulty: number;
  attemptsOnFaulty: number;
  /** Client requests for which two or more engine attempts started a 200 (duplicate generation). */
  duplicated: number;
}

function tally(engines: readonly RunningSimEngine[], prefix: string): Tally {
  const maps = engines.map((e) => attemptsById(e, prefix));
  const started200 = new Map<string, number>();
  let attempts = 0;
  for (const m of maps) {
    for (const [id, statuses] of m) {
      attempts += statuses.length;
      started200.set(id, (started200.get(id) ?? 0) + statuses.filter((st) => st === 200).length);
    }
  }
  const a = maps[0] ?? new Map<string, number[]>();
  let attemptsOnFaulty = 0;
  for (const statuses of a.values()) attemptsOnFaulty += statuses.length;
  const duplicated = [...started200.values()].filter((n) => n >= 2).length;
  return { attempts, onFaulty: a.size, attemptsOnFaulty, duplicated };
}

function legit(s: Settings, routerUrl: string, prefix: string, paceMs = 0): Promise<Result[]> {
  return runLoad(
    s.requests,
    s.concurrency,
    (i) => send(routerUrl, `${prefix}${i}`, chatBody(i, i % 2 === 1, s.tokens), i % 2 === 1, s.timeoutMs),
    paceMs,
  );
}

export interface FaultRow {
  scenario: FaultScenario;
  results: Result[];
  tally: Tally;
  /** Upload outcomes by kind ("24 502 upstream_unreachable"), for the upload row. */
  uploads?: string;
  /** Engine A's and B's circuits when the load ended. */
  circuits: string[];
  wallMs: number;
}

export async function runFault(sc: FaultScenario, s: Settings): Promise<FaultRow> {
  const started = performance.now();
  const prefix = `${sc.key}-req-`;
  const options = [sc.faulty ? { ...healthy(s), ...sc.faulty } : healthy(s), healthy(s)];
  const server = sc.uploads ? { maxPayloadSize: s.uploadLimitBytes } : {};
  const { value, engines, circuits } = await withStack(options, s, server, async (url) => {
    const [results, up] = await Promise.all([
      legit(s, url, prefix),
      sc.uploads ? oversizedUploads(s, url, `${sc.key}-upload-`) : Promise.resolve([]),
    ]);
    return { results, up };
  });
  const counts = new Map<string, number>();
  for (const o of value.up) counts.set(o, (counts.get(o) ?? 0) + 1);
  const row: FaultRow = {
    scenario: sc,
    results: value.results,
    tally: tally(engines, prefix),
    circuits,
    wallMs: performance.now() - started,
  };
  if (sc.uploads) {
    row.uploads = [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([o, n]) => `${n} × ${o}`)
      .join(', ');
  }
  return row;
}

export interface PoolRow {
  scenario: string;
  results: Result[];
  tally: Tally;
  /** Blip: when the engine sent its last injected 503 (ms, same clock as the results); else null. */
  recoveredAtMs: number | null;
  wallMs: number;
}

/** A single engine whose first `blip` inference requests get 503, then it is fine; paced load. */
export async function runBlip(s: Settings, blip = 10): Promise<PoolRow> {
  const started = performance.now();
  const options = [{ ...healthy(s), failure: { mode: 'status' as const, status: 503, first: blip } }];
  const { value, engines } = await withStack(options, s, {}, (url) =>
    legit(s, url, 'blip-req-', s.blipDurationMs / s.requests),
  );
  const injected = engines[0]!.engine.log.filter((e) => e.injected === 'status');
  const last = injected.length >= blip ? injected[blip - 1]! : undefined;
  return {
    scenario: `single engine, a 503 blip of its first ${blip} responses, then healthy`,
    results: value,
    tally: tally(engines, 'blip-req-'),
    recoveredAtMs: last?.tEndMs ?? null,
    wallMs: performance.now() - started,
  };
}

/** Both engines answer 503 to everything. */
export async function runOutage(s: Settings): Promise<PoolRow> {
  const started = performance.now();
  const down = { ...healthy(s), failure: { mode: 'status' as const, status: 503 } };
  const { value, engines } = await withStack([down, down], s, {}, (url) => legit(s, url, 'outage-req-'));
  return {
    scenario: 'total outage: both engines answer 503',
    results: value,
    tally: tally(engines, 'outage-req-'),
    recoveredAtMs: null,
    wallMs: performance.now() - started,
  };
}
