/**
 * Requests node:http rejects before any handler runs (headers over the size limit, a malformed
 * request line or header): a short OpenAI-shaped JSON answer, then the connection closes. Nothing
 * of the request is echoed. Wire it with `server.on('clientError', handleClientError)`.
 */
import type { Duplex } from 'node:stream';

interface Rejection {
  status: number;
  reason: string;
  message: string;
}

const BY_CODE: Record<string, Rejection> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    message: 'request headers too large',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    reason: 'Payload Too Large',
    message: 'chunk extensions too large',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', message: 'request timed out' },
};

const MALFORMED: Rejection = { status: 400, reason: 'Bad Request', message: 'malformed HTTP request' };

/** The bytes answering a rejected request: status line, JSON body with its length, `Connection: close`. */
export function clientErrorAnswer(code: string | undefined): string {
  const r = (code !== undefined && BY_CODE[code]) || MALFORMED;
  const body = JSON.stringify({
    error: { message: r.message, type: 'invalid_request_error', code: 'bad_request', param: null },
  });
  return (
    `HTTP/1.1 ${r.status} ${r.reason}\r\n` +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** A `clientError` listener for a node:http server. */
export function handleClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A response already under way (or a peer that left) cannot take a status line: just close.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  socket.end(clientErrorAnswer(err.code));
}
