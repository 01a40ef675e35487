/**
 * Load of `npm run bench`: wrk when installed (one thread, a POST script that prints a JSON
 * summary), else a closed-loop undici client in this process; and a streaming client that times the
 * first body chunk of each response.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { quantile } from './pd-support.ts';

export interface Throughput {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  errors: number;
}

const PATH = '/v1/chat/completions';
const HEADERS = { 'content-type': 'application/json' };

/** A wrk script: `head` sets what each request sends; the summary is printed as one JSON line. */
function wrkScript(dir: string, head: string): string {
  const path = join(dir, 'post.lua');
  writeFileSync(
    path,
    `wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
${head}
done = function(summary, latency, requests)
  local bad = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout + summary.errors.status
  io.write(string.format('WRK {"requests":%d,"us":%d,"errors":%d,"p50":%d,"p99":%d}\\n',
    summary.requests, summary.duration, bad, latency:percentile(50), latency:percentile(99)))
end
`,
  );
  return path;
}

/** wrk -t1 -cN for `seconds` against the chat route. */
export function wrk(dir: string, url: string, body: string, conc: number, seconds: number) {
  return wrkScripted(dir, url, `wrk.body = ${JSON.stringify(body)}`, conc, seconds);
}

/** The same with a script of its own: `head` is Lua that sets `wrk.body` or defines `request()`. */
export function wrkScripted(dir: string, url: string, head: string, conc: number, seconds: number) {
  const script = wrkScript(dir, head);
  const args = ['-t1', `-c${conc}`, `-d${seconds}s`, '-s', script, `${url}${PATH}`];
  return new Promise<Throughput>((resolve, reject) => {
    execFile('wrk', args, { encoding: 'utf8' }, (err, stdout) => {
      const line = /WRK (\{.*\})/.exec(stdout)?.[1];
      if (err || line === undefined) return reject(err ?? new Error(`wrk said: ${stdout}`));
      const r = JSON.parse(line) as {
        requests: number;
        us: number;
        errors: number;
        p50: number;
        p99: number;
      };
      resolve({
        rps: r.requests / (r.us / 1e6),
        p50Ms: r.p50 / 1000,
        p99Ms: r.p99 / 1000,
        requests: r.requests,
        errors: r.errors,
      });
    });
  });
}

function send(pool: Pool, body: string, onFirstChunk?: () => void): Promise<number> {
  return new Promise((resolve) => {
    pool.request({ path: PATH, method: 'POST', headers: HEADERS, body }, (err, answer) => {
      if (err || !answer) return resolve(0);
      let first = true;
      answer.body.on('data', () => {
        if (first) {
          first = false;
          onFirstChunk?.();
        }
      });
      answer.body.on('end', () => resolve(answer.statusCode));
      answer.body.on('error', () => resolve(0));
    });
  });
}

/** One body for every request, or a function that makes each request's body. */
export type Body = string | (() => string);

/**
 * `count` requests from `conc` closed-loop clients (or, with `count` 0, as many as fit in
 * `seconds`): latency of each, requests per second.
 */
export async function closedLoop(url: string, body: Body, conc: number, count: number, seconds = 0) {
  const pool = new Pool(url, { connections: conc, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  let started = 0;
  const begin = performance.now();
  const deadline = begin + seconds * 1000;
  const more = () => (count > 0 ? started < count : performance.now() < deadline);
  const client = async () => {
    while (more()) {
      started++;
      const t = performance.now();
      const status = await send(pool, typeof body === 'string' ? body : body());
      if (status === 200) latencies.push(performance.now() - t);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: conc }, client));
  const wallMs = performance.now() - begin;
  await pool.close();
  const result: Throughput = {
    rps: (latencies.length / wallMs) * 1000,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    requests: latencies.length + errors,
    errors,
  };
  return result;
}

/** Streams for `seconds` from `conc` closed-loop clients: time to the first body chunk of each. */
export async function streamTtft(url: string, body: string, conc: number, seconds: number) {
  const pool = new Pool(url, { connections: conc, pipelining: 1 });
  const ttfts: number[] = [];
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  const client = async () => {
    while (performance.now() < deadline) {
      const t = performance.now();
      let ttft = -1;
      const status = await send(pool, body, () => {
        ttft = performance.now() - t;
      });
      if (status === 200 && ttft >= 0) ttfts.push(ttft);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: conc }, client));
  await pool.close();
  return { p50Ms: quantile(ttfts, 0.5), p99Ms: quantile(ttfts, 0.99), count: ttfts.length, errors };
}
