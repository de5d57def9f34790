/**
 * Upgrade requests that do not become an event socket: a handshake ws would refuse (found first, so the
 * answer is JSON like every other error), and a protocol switch asked of any other route.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { writeRawError } from '../web/client-errors';

const WS_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** What ws would refuse in a handshake, found first so the answer is JSON like every other error. */
export function handshakeProblem(req: http.IncomingMessage): { status: number; detail: string } | null {
  if (req.method !== 'GET') return { status: 400, detail: 'A websocket handshake must be a GET request' };
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    return { status: 400, detail: 'Upgrade must be websocket' };
  if (!WS_KEY.test(req.headers['sec-websocket-key'] ?? ''))
    return { status: 400, detail: 'Missing or invalid Sec-WebSocket-Key header' };
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return { status: 426, detail: 'Unsupported Sec-WebSocket-Version: send 13' };
  return null;
}

/** Answers a handshake problem as JSON (a 426 names the versions served). */
export function refuseHandshake(socket: Duplex, problem: { status: number; detail: string }): void {
  writeRawError(
    socket,
    problem.status,
    problem.detail,
    problem.status === 426 ? { 'Sec-WebSocket-Version': '13, 8' } : {},
  );
}

/**
 * Any other route asked to switch protocols (Upgrade: h2c, or a websocket elsewhere): a request without a
 * body is answered over HTTP/1.1 as if it had not asked; anything else is refused.
 */
export function answerOtherUpgrade(server: http.Server, req: http.IncomingMessage, socket: Duplex): void {
  if (
    (req.method === 'GET' || req.method === 'HEAD') &&
    !req.headers['content-length'] &&
    !req.headers['transfer-encoding']
  ) {
    serveOverHttp(server, req, socket);
  } else {
    writeRawError(
      socket,
      400,
      'Protocol upgrades are served only on /api/v1/conversation/{conversation_id}/events/socket',
    );
  }
}

/** Hands a plain request that came through 'upgrade' to the HTTP app, on a connection closed after it. */
function serveOverHttp(server: http.Server, req: http.IncomingMessage, socket: Duplex): void {
  const res = new http.ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.on('finish', () => {
    res.detachSocket(socket as Socket);
    socket.end();
  });
  server.emit('request', req, res);
}
