/**
 * WebSocket endpoint for one conversation's events:
 *   GET /api/v1/conversation/{conversation_id}/events/socket[?after_id=...|?resend_all=true]
 * Auth: the X-Access-Token header, or a first frame {"type":"auth","access_token":"..."} within 10 s.
 * Closes 4001 on bad auth, 4004 on an unknown or foreign conversation, 4000 on bad parameters,
 * 1013 when the subscriber does not read. Each message is one event's JSON. This file routes upgrades
 * and keeps sockets alive; one socket's life is in event-socket-session.ts.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { writeRawError } from '../web/client-errors';
import { admitBeforeOpen, openEventSocket, type EventSocketDeps, type EventSockets } from './event-socket-session';
import { answerOtherUpgrade, handshakeProblem, refuseHandshake } from './websocket-handshake';

export const SOCKET_PATH = /^\/api\/v1\/conversation\/([^/]+)\/events\/socket$/;
/**
 * How long a handshake whose key is in its header waits for the lookups that place the socket in the log
 * (ms); past it the socket opens anyway and is placed when they answer.
 */
export const ADMISSION_WAIT_MS = 5_000;

/** Attaches the endpoint to the api's HTTP server; returns a function that closes every socket. */
export function attachEventSocket(server: http.Server, deps: EventSocketDeps): () => Promise<void> {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const sockets: EventSockets = { deps, alive: new WeakMap<WebSocket, boolean>(), openByUser: new Map() };

  // Handshake problems ws finds itself (a bad extension header, say) get the same JSON answer as ours.
  wss.on('wsClientError', (err: Error, socket: Duplex) =>
    writeRawError(socket, 400, `Bad websocket handshake: ${err.message}`),
  );
  wss.on('error', (err: Error) => deps.log.warn({ err }, 'event socket server error'));

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    // A peer that resets during the handshake must not take the process down.
    socket.on('error', () => socket.destroy());
    try {
      upgrade(server, wss, sockets, req, socket, head);
    } catch (e) {
      deps.log.error({ err: e }, 'websocket upgrade failed');
      writeRawError(socket, 500, 'Internal Server Error');
    }
  });

  const pinger = pingEvery(wss, sockets.alive, deps.pingIntervalMs ?? 30_000);
  return async () => {
    clearInterval(pinger);
    for (const ws of wss.clients) ws.close(1001, 'server shutting down');
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
}

/** An upgrade request: an event socket on its path, anything else answered without one. */
function upgrade(
  server: http.Server,
  wss: WebSocketServer,
  sockets: EventSockets,
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://localhost');
  } catch {
    writeRawError(socket, 400, 'Bad Request: the request target is not a valid path');
    return;
  }
  const match = SOCKET_PATH.exec(url.pathname);
  if (!match) {
    answerOtherUpgrade(server, req, socket);
    return;
  }
  const problem = handshakeProblem(req);
  if (problem) {
    refuseHandshake(socket, problem);
    return;
  }
  // A key in the header is checked, and the socket's start in the log read, before the socket opens:
  // whatever the conversation stores once the client sees it open reaches it.
  const early = admitBeforeOpen(sockets, req, match[1]!, url.searchParams);
  const accept = () => {
    try {
      wss.handleUpgrade(req, socket, head, (ws) =>
        openEventSocket(sockets, ws, req, match[1]!, url.searchParams, early),
      );
    } catch (e) {
      sockets.deps.log.error({ err: e }, 'websocket upgrade failed');
      writeRawError(socket, 500, 'Internal Server Error');
    }
  };
  if (!early) return accept();
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ADMISSION_WAIT_MS)));
  // A rejection (the database away) is the opened socket's to report (1013); here it only ends the wait.
  void Promise.race([early, waited])
    .catch(() => undefined)
    .then(() => {
      clearTimeout(timer);
      accept();
    });
}

/** Pings every socket each interval; one that did not answer the last ping is terminated. */
function pingEvery(wss: WebSocketServer, alive: WeakMap<WebSocket, boolean>, intervalMs: number): NodeJS.Timeout {
  const pinger = setInterval(() => {
    for (const ws of wss.clients) {
      if (alive.get(ws) === false) {
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, intervalMs);
  pinger.unref();
  return pinger;
}
