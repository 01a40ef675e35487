/**
 * Loopback TCP stand-ins for a network in trouble: a proxy to a real server that can stall
 * (hold every byte), drop its connections and refuse new ones; and a server that accepts and
 * never answers.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections accepted so far (refused ones included: each is a connection attempt). */
  attempts(): number;
  /** Holds the bytes of every connection, both ways, until `resume()`. */
  pause(): void;
  resume(): void;
  /** Cuts every open connection and closes new ones at once until `refuse(false)`. */
  refuse(on: boolean): void;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let attempts = 0;
  let paused = false;
  let refusing = false;
  const held: Array<() => void> = [];

  const forward = (from: Socket, to: Socket): void => {
    from.on('data', (chunk) => {
      if (paused) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
  };
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };

  const server = createServer((client) => {
    attempts++;
    track(client);
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    track(upstream);
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const port = await listen(server);
  return {
    port,
    attempts: () => attempts,
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      for (const send of held.splice(0)) send();
    },
    refuse: (on) => {
      refusing = on;
      if (on) for (const s of sockets) s.destroy();
    },
    close: () => closeServer(server, sockets),
  };
}

/** A server that accepts connections and never sends a byte. */
export async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server);
  return { port, close: () => closeServer(server, sockets) };
}
