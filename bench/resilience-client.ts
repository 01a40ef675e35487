/**
 * The client side of the resilience benchmark: the workload (a shared 600-character system prompt,
 * distinct user turns, every other request streaming), one request with a hard client timeout and
 * a verdict on what came back, a closed-loop (optionally paced) load, and percentiles.
 */

/** Wall-clock milliseconds on the same scale as the simulator's log (`tMs`, `tEndMs`). */
export const nowMs = () => performance.timeOrigin + performance.now();

const SYSTEM_SEED =
  'You are the support assistant of a company that runs GPU inference clusters. Answer in plain ' +
  'English, be precise, cite the relevant configuration flag when there is one, never invent ' +
  'numbers, and keep every answer short enough to read on a phone. ';

/** The system prompt every request shares: exactly 600 characters. */
export const SYSTEM_PROMPT = SYSTEM_SEED.repeat(Math.ceil(600 / SYSTEM_SEED.length)).slice(0, 600);

const TOPICS = ['timeouts', 'retries', 'health checks', 'load balancing', 'prefix caching', 'quotas'];

/** A chat completion: the shared system prompt and a user turn that no other request has. */
export function chatBody(i: number, stream: boolean, maxTokens: number): string {
  const topic = TOPICS[i % TOPICS.length];
  return JSON.stringify({
    model: 'sim-model',
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `Ticket #${i}: how should I tune ${topic} for cluster ${(i * 7919) % 1000}?` },
    ],
    max_tokens: maxTokens,
    stream,
  });
}

/**
 * What one client request ended as. ok: a 200 with a complete body. broken: a 200 whose body was
 * cut or carried an error event. router: an error answered by the router (x-router-error-code).
 * engine: an engine's own error response passed through. timeout: the client gave up (no answer
 * within the client timeout). transport: the connection failed.
 */
export type Verdict = 'ok' | 'broken' | 'router' | 'engine' | 'other' | 'timeout' | 'transport';

export interface Result {
  id: string;
  stream: boolean;
  startMs: number;
  endMs: number;
  status: number;
  verdict: Verdict;
  /** The router's error code, or the engine's status, for the error summary. */
  code: string;
}

function complete(text: string, stream: boolean): boolean {
  if (stream) return text.includes('data: [DONE]') && !text.includes('"upstream_stream_error"');
  try {
    return Array.isArray((JSON.parse(text) as { choices?: unknown }).choices);
  } catch {
    return false;
  }
}

/** The error code behind a failed fetch ("ECONNRESET", "UND_ERR_SOCKET"), else its name. */
export function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; name?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.name === 'string') return cause.name;
  return err instanceof Error ? err.name : 'error';
}

/** POSTs `body` to `path` with `x-request-id: id`, giving up after `timeoutMs` (headers and body). */
export async function send(
  routerUrl: string,
  id: string,
  body: string,
  stream: boolean,
  timeoutMs: number,
  path = '/v1/chat/completions',
): Promise<Result> {
  const signal = AbortSignal.timeout(timeoutMs);
  const startMs = nowMs();
  const done = (status: number, verdict: Verdict, code: string): Result => ({
    id,
    stream,
    startMs,
    endMs: nowMs(),
    status,
    verdict,
    code,
  });
  let res: Response;
  try {
    res = await fetch(`${routerUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      body,
      signal,
    });
  } catch (err) {
    if (signal.aborted) return done(0, 'timeout', 'timeout');
    return done(0, 'transport', `no response (${causeOf(err)})`);
  }
  let text: string;
  try {
    text = await res.text();
  } catch {
    return done(res.status, signal.aborted ? 'timeout' : 'broken', signal.aborted ? 'timeout' : 'body cut');
  }
  const routerCode = res.headers.get('x-router-error-code');
  if (res.status === 200) {
    return complete(text, stream) ? done(200, 'ok', '') : done(200, 'broken', 'broken 200');
  }
  if (routerCode) return done(res.status, 'router', `${res.status} ${routerCode}`);
  if (res.headers.get('x-sim-engine')) return done(res.status, 'engine', `${res.status} from the engine`);
  return done(res.status, 'other', String(res.status));
}

/**
 * Runs `n` requests, at most `concurrency` at once (closed loop). With `paceMs`, request i does not
 * start before i × paceMs after the start (an upper bound on the rate as well).
 */
export async function runLoad(
  n: number,
  concurrency: number,
  one: (i: number) => Promise<Result>,
  paceMs = 0,
): Promise<Result[]> {
  const results: Result[] = new Array(n);
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const wait = t0 + i * paceMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      results[i] = await one(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
  return results;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms >= 1000) return `${(ms / 1000).toFixed(ms >= 10_000 ? 1 : 2)} s`;
  return `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`;
}

/** "p50 / p99" of the client latencies (request start to the end of the body, or the error). */
export function latencies(results: readonly Result[]): string {
  const sorted = results.map((r) => r.endMs - r.startMs).sort((a, b) => a - b);
  return `${formatMs(percentile(sorted, 50))} / ${formatMs(percentile(sorted, 99))}`;
}

export function errorCount(results: readonly Result[]): number {
  return results.filter((r) => r.verdict !== 'ok').length;
}

/** "12 (6.0 %)" */
export function share(count: number, total: number): string {
  return `${count} (${total === 0 ? '–' : ((count / total) * 100).toFixed(1)} %)`;
}

/** The errors grouped by kind, largest first: "180 × timeout, 20 × 502 upstream_unreachable". */
export function errorKinds(results: readonly Result[]): string {
  const counts = new Map<string, number>();
  for (const r of results) if (r.verdict !== 'ok') counts.set(r.code, (counts.get(r.code) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([code, n]) => `${n} × ${code}`)
    .join(', ');
}
