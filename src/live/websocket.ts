/**
 * WebSocket endpoint for one conversation's events:
 *   GET /api/v1/conversation/{conversation_id}/events/socket[?after_id=...|?resend_all=true]
 * Auth: the X-Access-Token header, or a first frame {"type":"auth","access_token":"..."} within 10 s.
 * Closes 4001 on bad auth, 4004 on an unknown or foreign conversation, 4000 on bad parameters,
 * 1013 when the subscriber does not read. Each message is one event's JSON.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../logger';
import type { ApiKeysStore } from '../store/api-keys-store';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventsStore } from '../store/events-store';
import { DEFAULT_SUBSCRIPTION_LIMITS, Subscription, type EventHub, type SubscriptionLimits } from './event-hub';

export const SOCKET_PATH = /^\/api\/v1\/conversation\/([^/]+)\/events\/socket$/;
export const CLOSE_BAD_AUTH = 4001;
export const CLOSE_NOT_FOUND = 4004;
export const CLOSE_BAD_REQUEST = 4000;

export interface EventSocketDeps {
  hub: EventHub;
  apiKeys: ApiKeysStore;
  conversations: ConversationsStore;
  events: EventsStore;
  log: Logger;
  authTimeoutMs?: number;
  pingIntervalMs?: number;
  limits?: SubscriptionLimits;
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

/** Attaches the endpoint to the api's HTTP server; returns a function that closes every socket. */
export function attachEventSocket(server: http.Server, deps: EventSocketDeps): () => Promise<void> {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const alive = new WeakMap<WebSocket, boolean>();

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const match = SOCKET_PATH.exec(url.pathname);
    if (!match) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      void serve(ws, req, decodeURIComponent(match[1]!), url.searchParams).catch((e: unknown) => {
        deps.log.error({ err: e }, 'event socket failed');
        ws.close(1011, 'internal error');
      });
    });
  });

  async function serve(ws: WebSocket, req: http.IncomingMessage, conversationId: string, params: URLSearchParams): Promise<void> {
    alive.set(ws, true);
    ws.on('pong', () => alive.set(ws, true));
    const headerToken = req.headers['x-access-token'];
    const token = typeof headerToken === 'string' && headerToken ? headerToken : await firstFrameToken(ws, deps.authTimeoutMs ?? 10_000);
    if (ws.readyState !== ws.OPEN) return;
    const userId = token ? await deps.apiKeys.resolve(token) : null;
    if (!userId) return ws.close(CLOSE_BAD_AUTH, token ? 'invalid API key' : 'authentication required');
    if (!(await deps.conversations.getOwned(conversationId, userId))) return ws.close(CLOSE_NOT_FOUND, 'conversation not found');

    const afterId = params.get('after_id');
    const resendAll = params.get('resend_all');
    if (resendAll !== null && !['true', 'false'].includes(resendAll)) return ws.close(CLOSE_BAD_REQUEST, 'resend_all must be true or false');
    let afterSeq: number | null = null;
    if (resendAll === 'true') afterSeq = 0;
    else if (afterId) {
      afterSeq = await deps.events.seqOf(conversationId, afterId);
      if (afterSeq === null) return ws.close(CLOSE_BAD_REQUEST, 'after_id is not an event of this conversation');
    }

    const sub = new Subscription(
      conversationId,
      {
        send: (json) => ws.send(json),
        bufferedAmount: () => ws.bufferedAmount,
        close: (code, reason) => ws.close(code, reason),
      },
      { range: (...a) => deps.events.range(...a), lastSeq: (id) => deps.conversations.lastSeq(id) },
      deps.limits ?? DEFAULT_SUBSCRIPTION_LIMITS,
    );
    const remove = deps.hub.add(sub);
    ws.on('close', () => {
      sub.closed = true;
      remove();
    });
    // Registered before reading the log: what is appended during the catch-up waits in the subscription.
    await sub.start(afterSeq);
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
