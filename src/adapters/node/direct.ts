/**
 * The JSON inference routes served straight from Node's request and response objects: the same
 * handler as every other way in (core/http/inference.ts), reached without @hono/node-server
 * building a Web `Request`, Hono routing it and the answer going back through a Web `Response`.
 * Skipping that path saved 7-12 % of a small request's CPU on Node (docs/benchmarks.md, round 4).
 *
 * Taken only for what both ways answer alike: a POST to an exact JSON route, a plain Host header and
 * a request target node-server would keep as it is, and only when the router runs no middleware on
 * those routes but client auth, which `Router.direct` applies itself (it is unset with CORS
 * origins). Everything else goes to the app as before.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Answer } from '../../core/contracts/answer.ts';
import type { ChunkReader } from '../../core/contracts/upstream.ts';
import { bodyBrokeOff } from '../../core/http/body.ts';
import { type Inbound, jsonRouteOfTarget } from '../../core/http/inbound.ts';
import type { Inference } from '../../core/http/inference.ts';
import { rawHeader } from '../../core/routing/headers.ts';
import { ResponseLink } from './incoming.ts';

/** A Host header node-server takes as it is (lower-case name, optional port). */
const PLAIN_HOST = /^[a-z0-9._-]+(?::\d{1,5})?$/;
/** A request target node-server keeps unchanged (no escaping or normalising needed). */
const PLAIN_TARGET = /^\/[!#$&-;=?-[\]_a-z~]*$/;

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** The path of a plain target, when it is one of the JSON routes. */
function routeOf(inference: Inference, req: IncomingMessage): string | undefined {
  if (req.method !== 'POST') return undefined;
  const target = req.url;
  const host = req.headers.host;
  if (target === undefined || host === undefined || !PLAIN_HOST.test(host) || !PLAIN_TARGET.test(target))
    return undefined;
  return jsonRouteOfTarget(inference.jsonRoutes, 'POST', target);
}

/** The whole body; a client that breaks off mid-body is the router's 400 (nobody is left to read it). */
function readAll(req: IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.byteLength;
    });
    req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
    req.once('close', () => {
      if (!req.complete) reject(bodyBrokeOff());
    });
  });
}

export function nodeInbound(req: IncomingMessage, res: ServerResponse): Inbound {
  const headers = req.headers;
  const target = req.url as string;
  return {
    method: 'POST',
    url: `http://${headers.host as string}${target}`,
    target,
    header: (name) => rawHeader(headers, name),
    headerSource: () => headers,
    peer: req.socket.remoteAddress,
    client: () => new ResponseLink(res),
    bytes: () => readAll(req),
    stream: () => Readable.toWeb(req) as ReadableStream<Uint8Array>,
  };
}

/**
 * Relays a streamed answer chunk by chunk, with backpressure; a client that leaves cancels it. With
 * a reader that offers `pull` (the relay over Node's transport), a chunk is written in the call that
 * brought it from the engine's socket.
 */
function pump(reader: ChunkReader, res: ServerResponse): void {
  const cancel = () => {
    reader.cancel().catch(() => {});
  };
  const broke = (err: unknown) => {
    res.off('close', cancel);
    res.destroy(err instanceof Error ? err : undefined);
  };
  const next = () => {
    if (reader.pull) reader.pull(flow, broke);
    else reader.read().then(flow, broke);
  };
  const flow = ({ done, value }: ReadableStreamReadResult<Uint8Array>) => {
    if (done) {
      res.off('close', cancel);
      res.end();
    } else if (res.write(value)) next();
    else res.once('drain', next);
  };
  res.once('close', cancel);
  next();
}

/** Writes an answer. A request body left unread (refused before reading) closes the connection. */
export function writeAnswer(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  const { status, headers, body } = answer;
  if (!req.complete) headers.connection = 'close';
  if (body === null || body instanceof Uint8Array) {
    if (body !== null) headers['content-length'] = String(body.byteLength);
    res.writeHead(status, headers);
    res.end(body ?? undefined);
    return;
  }
  if (res.destroyed) {
    body.cancel().catch(() => {}); // the client left before the answer was ready
    return;
  }
  // The pipeline answers a stream once its first chunk is in (attempt-send.ts), so the head goes out
  // with that chunk in one write: flushing it alone cost a syscall per streamed request, about a
  // tenth of its CPU (docs/benchmarks.md, round 6). An answer relayed without its first chunk says
  // so (`flushHead`), and its head goes at once.
  res.writeHead(status, headers);
  if (answer.flushHead === true) res.flushHeaders();
  pump(body.getReader(), res);
}

/** A request listener that serves the JSON inference routes itself and hands the rest to `app`. */
export function directListener(inference: Inference, app: Listener): Listener {
  return (req, res) => {
    const route = routeOf(inference, req);
    if (route === undefined) return app(req, res);
    inference.serve(route, nodeInbound(req, res)).then(
      (answer) => writeAnswer(req, res, answer),
      (err: unknown) => writeAnswer(req, res, inference.internalError(route, err)),
    );
  };
}
