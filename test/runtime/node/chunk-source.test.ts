/**
 * The Node transport's answers (engine-call.ts, chunk-source.ts) over real loopback HTTP: chunks
 * reach the reader as the engine sends them, with no Web stream in between; a reader that stops
 * reading stops the socket; cancel closes the engine's connection; a body cut by the engine fails
 * the read; a HEAD answer has no body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ChunkQueue } from '../../../src/adapters/undici/chunk-source.ts';
import { createUndiciUpstream } from '../../../src/adapters/undici/upstream.ts';
import type { ChunkSource } from '../../../src/core/contracts/upstream.ts';

const decoder = new TextDecoder();
let server: http.Server | undefined;
const upstream = createUndiciUpstream();

afterEach(async () => {
  const running = server;
  server = undefined;
  if (!running) return;
  running.closeAllConnections();
  await new Promise((resolve) => running.close(resolve));
});

async function engine(handler: http.RequestListener): Promise<string> {
  server = http.createServer(handler);
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const sse = { 'content-type': 'text/event-stream' };

async function open(url: string): Promise<ChunkSource> {
  const res = await upstream({
    url: `${url}/v1/chat`,
    method: 'GET',
    headers: {},
    body: null,
    signal: new AbortController().signal,
  });
  expect(res.status).toBe(200);
  expect(res.body).not.toBeNull();
  expect(res.body).not.toBeInstanceOf(Uint8Array);
  // The relay to the client is the only Web stream: the transport hands over its own source.
  expect(res.body).not.toBeInstanceOf(ReadableStream);
  return res.body as ChunkSource;
}

describe('the Node transport streams an answer chunk by chunk', () => {
  it('delivers each chunk as the engine sends it, then ends', async () => {
    let send: ((text: string) => void) | undefined;
    let end: (() => void) | undefined;
    const url = await engine((_req, res) => {
      res.writeHead(200, sse);
      res.flushHeaders();
      send = (text) => res.write(text);
      end = () => res.end();
    });
    const reader = (await open(url)).getReader();
    for (const text of ['data: a\n\n', 'data: b\n\n', 'data: c\n\n']) {
      const next = reader.read();
      send?.(text); // the read is pending before the chunk exists: nothing waits for more
      const read = await next;
      expect(read.done).toBe(false);
      expect(decoder.decode(read.value)).toBe(text);
    }
    end?.();
    expect((await reader.read()).done).toBe(true);
    expect((await reader.read()).done).toBe(true);
  });

  it('queues chunks nobody reads yet, pauses the socket past its bound, resumes when read', async () => {
    const url = await engine((_req, res) => {
      res.writeHead(200, sse);
      let i = 0;
      const more = () => {
        while (i < 400) {
          if (!res.write(`data: ${i++} ${'x'.repeat(2000)}\n\n`)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    const reader = (await open(url)).getReader();
    let text = '';
    for (;;) {
      const read = await reader.read();
      if (read.done) break;
      text += decoder.decode(read.value);
    }
    const events = text.split('\n\n').filter((e) => e !== '');
    expect(events).toHaveLength(400);
    expect(events.map((e) => Number(e.split(' ')[1]))).toEqual([...Array(400).keys()]);
  });

  it('stops the socket while 16 chunks wait unread, resumes it once the reader drains half', async () => {
    let resumed = 0;
    const queue = new ChunkQueue({ resume: () => resumed++, cancel: () => {} });
    const reader = queue.getReader();
    const chunk = (n: number) => new TextEncoder().encode(`${n}`);
    for (let i = 0; i < 15; i++) expect(queue.push(chunk(i))).toBe(true);
    expect(queue.push(chunk(15))).toBe(false); // the transport stops reading the socket
    for (let i = 0; i < 8; i++) expect(decoder.decode((await reader.read()).value)).toBe(`${i}`);
    expect(resumed).toBe(0);
    expect(decoder.decode((await reader.read()).value)).toBe('8');
    expect(resumed).toBe(1);
  });

  it('gives a HEAD answer no body, whatever its content-length says', async () => {
    const url = await engine((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '42' });
      res.end();
    });
    const res = await upstream({
      url: `${url}/v1/models`,
      method: 'HEAD',
      headers: {},
      body: null,
      signal: new AbortController().signal,
    });
    expect(res.status).toBe(200);
    expect(res.body).toBeInstanceOf(Uint8Array);
    expect((res.body as Uint8Array).byteLength).toBe(0);
  });

  it('cancel closes the connection to the engine', async () => {
    let closed: Promise<void> | undefined;
    const url = await engine((req, res) => {
      closed = new Promise((resolve) => req.socket.once('close', () => resolve()));
      res.writeHead(200, sse);
      res.write('data: first\n\n');
    });
    const source = await open(url);
    const reader = source.getReader();
    expect(decoder.decode((await reader.read()).value)).toBe('data: first\n\n');
    const pending = reader.read();
    await source.cancel('client left');
    expect((await pending).done).toBe(true);
    await closed; // the engine sees its connection go: it stops generating
    expect((await reader.read()).done).toBe(true);
  });

  it('a body the engine cuts fails the read instead of ending cleanly', async () => {
    const url = await engine((req, res) => {
      res.writeHead(200, sse);
      res.write('data: first\n\n', () => setImmediate(() => req.socket.destroy()));
    });
    const reader = (await open(url)).getReader();
    expect(decoder.decode((await reader.read()).value)).toBe('data: first\n\n');
    await expect(reader.read()).rejects.toBeTruthy();
    await expect(reader.read()).rejects.toBeTruthy();
  });
});
