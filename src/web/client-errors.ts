/**
 * Errors that Node's HTTP parser answers before any middleware runs (a malformed request line, headers
 * too large, a request not received within `requestTimeout`), and raw answers on sockets that left
 * HTTP (upgrades): each gets the same `{detail}` JSON body as every other error, then the connection
 * is closed.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { httpStatusText } from './errors';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  426: 'Upgrade Required',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
};

/** Writes a whole HTTP/1.1 answer with a `{detail}` body on a raw socket, and ends it. */
export function writeRawError(
  socket: Duplex,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ detail });
  const lines = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

const STATUS_OF_CODE: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
};

/** Answers the parser's client errors with JSON (Node's own answer has no body). */
export function answerClientErrors(server: http.Server): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    // Nothing to answer on a connection the client already dropped, or one whose answer has begun.
    if (
      err.code === 'ECONNRESET' ||
      !socket.writable ||
      (socket as Duplex & { bytesWritten?: number }).bytesWritten !== 0
    ) {
      socket.destroy();
      return;
    }
    const status = STATUS_OF_CODE[err.code ?? ''] ?? 400;
    writeRawError(
      socket,
      status,
      status === 400 ? 'Bad Request: the request could not be parsed' : httpStatusText(status),
    );
  });
}
