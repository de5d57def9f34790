/**
 * WebSocket endpoint for one conversation's events:
 *   GET /api/v1/conversation/{conversation_id}/events/socket[?after_id=...|?resend_all=true]
 * Auth: the X-Access-Token header, or a first frame {"type":"auth","access_token":"..."} within 10 s.
 * Closes 4001 on bad auth, 4004 on an unknown or foreign conversation, 4000 on bad parameters,
 * 1013 when the subscriber does not read. Each message is one event's JSON.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { Unavailable } from '../errors';
import { writeRawError } from '../web/client-errors';
import type { Logger } from '../logger';
import type { ApiKeysStore } from '../store/api-keys-store';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventsStore } from '../store/events-store';
import { DatabaseBusyError, translateStoreError } from '../store/errors';
import {
  CLOSE_TRY_AGAIN_LATER,
  DEFAULT_SUBSCRIPTION_LIMITS,
  Subscription,
  type EventHub,
  type SubscriptionLimits,
} from '../live/event-hub';

export const SOCKET_PATH = /^\/api\/v1\/conversation\/([^/]+)\/events\/socket$/;
export const CLOSE_BAD_AUTH = 4001;
export const CLOSE_NOT_FOUND = 4004;
export const CLOSE_BAD_REQUEST = 4000;
/** Past the user's open sockets (USER_MAX_WEBSOCKETS): as HTTP's 429. */
export const CLOSE_TOO_MANY = 4429;

export interface EventSocketDeps {
  hub: EventHub;
  apiKeys: ApiKeysStore;
  conversations: ConversationsStore;
  events: EventsStore;
  log: Logger;
  /** False until the api has prepared its database and live channel: subscribers are told to come back (1013). */
  ready?: () => boolean;
  authTimeoutMs?: number;
  pingIntervalMs?: number;
  limits?: SubscriptionLimits;
  /** Sockets one user may hold open on this api process (USER_MAX_WEBSOCKETS); null or absent: no limit. */
  maxPerUser?: number | null;
  /** Told how long after its store each live stored event was sent to a subscriber (ms): the delivery lag metric. */
  onDelivered?: (lagMs: number) => void;
}

function firstFrameToken(ws: WebSocket, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(null), timeoutMs);
    const onMessage = (data: Buffer) => {
      try {
        const frame = JSON.parse(data.toString('utf8')) as { type?: unknown; access_token?: unknown };
        done(frame.type === 'auth' && typeof frame.access_token === 'string' ? frame.access_token : null);
      } catch {
        done(null);
      }
    };
    const done = (token: string | null) => {
      clearTimeout(timer);
      ws.off('message', onMessage);
      ws.off('close', onClose);
      resolve(token);
    };
    const onClose = () => done(null);
    ws.once('message', onMessage);
    ws.once('close', onClose);
  });
}

const WS_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** What ws would refuse in a handshake, found first so the answer is JSON like every other error. */
function handshakeProblem(req: http.IncomingMessage): { status: number; detail: string } | null {
  if (req.method !== 'GET') return { status: 400, detail: 'A websocket handshake must be a GET request' };
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    return { status: 400, detail: 'Upgrade must be websocket' };
  if (!WS_KEY.test(req.headers['sec-websocket-key'] ?? ''))
    return { status: 400, detail: 'Missing or invalid Sec-WebSocket-Key header' };
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return { status: 426, detail: 'Unsupported Sec-WebSocket-Version: send 13' };
  return null;
}

/** Attaches the endpoint to the api's HTTP server; returns a function that closes every socket. */
export function attachEventSocket(server: http.Server, deps: EventSocketDeps): () => Promise<void> {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const alive = new WeakMap<WebSocket, boolean>();
  /** Each user's authenticated sockets open now (this process's; another api counts its own). */
  const openByUser = new Map<string, number>();

  // Handshake problems ws finds itself (a bad extension header, say) get the same JSON answer as ours.
  wss.on('wsClientError', (err: Error, socket: Duplex) =>
    writeRawError(socket, 400, `Bad websocket handshake: ${err.message}`),
  );
  wss.on('error', (err: Error) => deps.log.warn({ err }, 'event socket server error'));

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    // A peer that resets during the handshake must not take the process down.
    socket.on('error', () => socket.destroy());
    try {
      upgrade(req, socket, head);
    } catch (e) {
      deps.log.error({ err: e }, 'websocket upgrade failed');
      writeRawError(socket, 500, 'Internal Server Error');
    }
  });

  function upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      writeRawError(socket, 400, 'Bad Request: the request target is not a valid path');
      return;
    }
    const match = SOCKET_PATH.exec(url.pathname);
    if (!match) {
      // Any other route asked to switch protocols (Upgrade: h2c, or a websocket elsewhere): a request
      // without a body is answered over HTTP/1.1 as if it had not asked; anything else is refused.
      if (
        (req.method === 'GET' || req.method === 'HEAD') &&
        !req.headers['content-length'] &&
        !req.headers['transfer-encoding']
      ) {
        serveOverHttp(req, socket);
      } else {
        writeRawError(
          socket,
          400,
          'Protocol upgrades are served only on /api/v1/conversation/{conversation_id}/events/socket',
        );
      }
      return;
    }
    const problem = handshakeProblem(req);
    if (problem) {
      writeRawError(
        socket,
        problem.status,
        problem.detail,
        problem.status === 426 ? { 'Sec-WebSocket-Version': '13, 8' } : {},
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      // Protocol errors of the peer (a frame over maxPayload: 1009; a malformed frame: 1002) close this
      // socket, which ws does itself; an unhandled 'error' event would end the process.
      ws.on('error', (err: Error & { code?: string }) =>
        deps.log.debug({ err: err.message, code: err.code }, 'event socket protocol error'),
      );
      let conversationId: string;
      try {
        conversationId = decodeURIComponent(match[1]!);
      } catch {
        ws.close(CLOSE_BAD_REQUEST, 'conversation_id is not a valid percent-encoded path segment');
        return;
      }
      void serve(ws, req, conversationId, url.searchParams).catch((e: unknown) => {
        // A database that does not answer is not this socket's failure: the client may come back.
        if (translateStoreError(e) instanceof Unavailable) {
          deps.log.warn({ err: e }, 'event socket: the database did not answer');
          ws.close(CLOSE_TRY_AGAIN_LATER, 'the database did not answer; try again shortly');
          return;
        }
        deps.log.error({ err: e }, 'event socket failed');
        ws.close(1011, 'internal error');
      });
    });
  }

  /** Hands a plain request that came through 'upgrade' to the HTTP app, on a connection closed after it. */
  function serveOverHttp(req: http.IncomingMessage, socket: Duplex): void {
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.on('finish', () => {
      res.detachSocket(socket as Socket);
      socket.end();
    });
    server.emit('request', req, res);
  }

  async function serve(
    ws: WebSocket,
    req: http.IncomingMessage,
    conversationId: string,
    params: URLSearchParams,
  ): Promise<void> {
    // Until the api has prepared its database (indexes, the live channel), live events would not reach
    // a subscriber: it is told to come back before anything is looked up.
    if (deps.ready && !deps.ready())
      return ws.close(CLOSE_TRY_AGAIN_LATER, 'the service is starting; try again shortly');
    alive.set(ws, true);
    ws.on('pong', () => alive.set(ws, true));
    const headerToken = req.headers['x-access-token'];
    const token =
      typeof headerToken === 'string' && headerToken
        ? headerToken
        : await firstFrameToken(ws, deps.authTimeoutMs ?? 10_000);
    if (ws.readyState !== ws.OPEN) return;
    const userId = token ? await deps.apiKeys.resolve(token) : null;
    if (!userId) return ws.close(CLOSE_BAD_AUTH, token ? 'invalid API key' : 'authentication required');
    const conversation = await deps.conversations.getOwned(conversationId, userId);
    if (!conversation) return ws.close(CLOSE_NOT_FOUND, 'conversation not found');
    // A log in blocks stays so (a migration only adds them): the catch-up reads blocks for good.
    const { blocks } = conversation.layout;
    if (ws.readyState !== ws.OPEN) return;
    const open = openByUser.get(userId) ?? 0;
    if (deps.maxPerUser && open >= deps.maxPerUser) {
      return ws.close(
        CLOSE_TOO_MANY,
        `${open} event sockets open, as many as one user may (USER_MAX_WEBSOCKETS=${deps.maxPerUser}); close one first`,
      );
    }
    openByUser.set(userId, open + 1);
    ws.once('close', () => {
      const left = (openByUser.get(userId) ?? 1) - 1;
      if (left > 0) openByUser.set(userId, left);
      else openByUser.delete(userId);
    });

    const afterId = params.get('after_id');
    const resendAll = params.get('resend_all');
    if (resendAll !== null && !['true', 'false'].includes(resendAll))
      return ws.close(CLOSE_BAD_REQUEST, 'resend_all must be true or false');
    let afterSeq: number | null = null;
    if (resendAll === 'true') afterSeq = 0;
    else if (afterId) {
      afterSeq = await deps.events.seqOf(conversationId, afterId);
      if (afterSeq === null) return ws.close(CLOSE_BAD_REQUEST, 'after_id is not an event of this conversation');
    }

    // The peer may have gone during the lookups above: a subscription registered now would never be removed.
    if (ws.readyState !== ws.OPEN) return;
    const sub = new Subscription(
      conversationId,
      {
        send: (json) => ws.send(json),
        bufferedAmount: () => ws.bufferedAmount,
        close: (code, reason) => ws.close(code, reason),
      },
      {
        range: (id, after, limit, until) => deps.events.range(id, after, limit, until, blocks),
        lastSeq: (id) => deps.conversations.lastSeq(id),
      },
      deps.limits ?? DEFAULT_SUBSCRIPTION_LIMITS,
      deps.onDelivered,
    );
    const remove = deps.hub.add(sub);
    ws.on('close', () => {
      sub.closed = true;
      remove();
    });
    // Registered before reading the log: what is appended during the catch-up waits in the subscription.
    await sub.start(afterSeq).catch((e: unknown) => {
      // A log too busy to read within its budget: the client may come back later; anything else is ours.
      if (e instanceof DatabaseBusyError)
        return sub.close(CLOSE_TRY_AGAIN_LATER, 'the event log is busy; try again shortly');
      if (translateStoreError(e) instanceof Unavailable)
        return sub.close(CLOSE_TRY_AGAIN_LATER, 'the database did not answer; try again shortly');
      throw e;
    });
  }

  const pinger = setInterval(() => {
    for (const ws of wss.clients) {
      if (alive.get(ws) === false) {
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, deps.pingIntervalMs ?? 30_000);
  pinger.unref();

  return async () => {
    clearInterval(pinger);
    for (const ws of wss.clients) ws.close(1001, 'server shutting down');
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
}
