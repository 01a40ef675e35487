/** Loopback helpers: a port nobody listens on, and an HTTP/1.1 server that drops reused connections. */
import { createServer, type Server, type Socket } from 'node:net';

/** A loopback port that was free a moment ago (bound, then released): connecting to it is refused. */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * An engine whose keep-alive connections go stale: it answers the first request on a connection
 * (keep-alive), then closes that connection without answering when a second request arrives on it,
 * as a server that timed the idle connection out would. New connections always get an answer.
 */
export async function staleConnectionServer(): Promise<{
  url: string;
  requests: () => number;
  close(): Promise<void>;
}> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const body = JSON.stringify({ object: 'list', data: [{ id: 'sim-model', object: 'model' }] });
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let served = 0;
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffer.slice(0, end);
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      buffer = buffer.slice(end + 4 + length);
      requests++;
      if (served++ > 0) {
        socket.destroy();
        return;
      }
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n${body}`,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * An engine whose first answer is a 503 with a chunked body that never ends (so only a proxy that
 * cancels the discarded body lets that connection go); every later request gets a 200 JSON answer.
 * `firstClosed` resolves when the first request's connection is closed.
 */
export async function endless503Server(): Promise<{
  url: string;
  firstClosed: Promise<void>;
  close(): Promise<void>;
}> {
  const { createServer: createHttpServer } = await import('node:http');
  let count = 0;
  let resolveClosed: () => void = () => {};
  const firstClosed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const server = createHttpServer((req, res) => {
    req.resume();
    if (count++ === 0) {
      res.on('close', () => resolveClosed());
      res.writeHead(503, { 'content-type': 'application/json' });
      res.write('{"error":');
      return;
    }
    const body = JSON.stringify({ object: 'chat.completion', choices: [] });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    firstClosed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
