/**
 * One event socket from its opening to its subscription: the key (header or first frame), the owner's
 * check, the user's limit of open sockets, the start position its parameters ask for, and the hub's
 * subscription that carries the conversation's events to it. Also the close codes a client sees.
 */
import type http from 'node:http';
import type { WebSocket } from 'ws';
import { Unavailable } from '../errors';
import type { Logger } from '../logger';
import type { ApiKeysStore } from '../store/api-keys-store';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventLayout } from '../store/event-blocks';
import type { EventsStore } from '../store/events-store';
import { DatabaseBusyError, translateStoreError } from '../store/errors';
import {
  CLOSE_TRY_AGAIN_LATER,
  DEFAULT_SUBSCRIPTION_LIMITS,
  Subscription,
  type EventHub,
  type SubscriptionLimits,
} from '../live/event-hub';

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

/** What the sockets of one endpoint share. */
export interface EventSockets {
  deps: EventSocketDeps;
  /** Whether each socket answered the last ping. */
  alive: WeakMap<WebSocket, boolean>;
  /** Each user's authenticated sockets open now (this process's; another api counts its own). */
  openByUser: Map<string, number>;
}

/** Serves a socket ws has accepted for the conversation in the path (still percent-encoded). */
export function openEventSocket(
  sockets: EventSockets,
  ws: WebSocket,
  req: http.IncomingMessage,
  encodedId: string,
  params: URLSearchParams,
): void {
  const { deps } = sockets;
  // Protocol errors of the peer (a frame over maxPayload: 1009; a malformed frame: 1002) close this
  // socket, which ws does itself; an unhandled 'error' event would end the process.
  ws.on('error', (err: Error & { code?: string }) =>
    deps.log.debug({ err: err.message, code: err.code }, 'event socket protocol error'),
  );
  let conversationId: string;
  try {
    conversationId = decodeURIComponent(encodedId);
  } catch {
    ws.close(CLOSE_BAD_REQUEST, 'conversation_id is not a valid percent-encoded path segment');
    return;
  }
  void serve(sockets, ws, req, conversationId, params).catch((e: unknown) => {
    // A database that does not answer is not this socket's failure: the client may come back.
    if (translateStoreError(e) instanceof Unavailable) {
      deps.log.warn({ err: e }, 'event socket: the database did not answer');
      ws.close(CLOSE_TRY_AGAIN_LATER, 'the database did not answer; try again shortly');
      return;
    }
    deps.log.error({ err: e }, 'event socket failed');
    ws.close(1011, 'internal error');
  });
}

async function serve(
  sockets: EventSockets,
  ws: WebSocket,
  req: http.IncomingMessage,
  conversationId: string,
  params: URLSearchParams,
): Promise<void> {
  const { deps, alive } = sockets;
  // Until the api has prepared its database (indexes, the live channel), live events would not reach
  // a subscriber: it is told to come back before anything is looked up.
  if (deps.ready && !deps.ready()) return ws.close(CLOSE_TRY_AGAIN_LATER, 'the service is starting; try again shortly');
  alive.set(ws, true);
  ws.on('pong', () => alive.set(ws, true));
  const userId = await authenticate(ws, req, deps);
  if (!userId) return;
  const conversation = await deps.conversations.getOwned(conversationId, userId);
  if (!conversation) return ws.close(CLOSE_NOT_FOUND, 'conversation not found');
  // A log in blocks stays so (a migration only adds them): the catch-up reads blocks for good.
  const { blocks } = conversation.layout;
  if (ws.readyState !== ws.OPEN) return;
  if (!holdUserSocket(sockets, ws, userId)) return;
  const start = await startPosition(ws, deps.events, conversationId, params);
  if (!start) return;
  // The peer may have gone during the lookups above: a subscription registered now would never be removed.
  if (ws.readyState !== ws.OPEN) return;
  await subscribe(ws, deps, conversationId, blocks, start.afterSeq);
}

/**
 * The user whose key the socket gives (the X-Access-Token header, or a first frame within the time
 * limit); null when the socket closed meanwhile or has no valid key (then it is closed with 4001).
 */
async function authenticate(ws: WebSocket, req: http.IncomingMessage, deps: EventSocketDeps): Promise<string | null> {
  const headerToken = req.headers['x-access-token'];
  const token =
    typeof headerToken === 'string' && headerToken
      ? headerToken
      : await firstFrameToken(ws, deps.authTimeoutMs ?? 10_000);
  if (ws.readyState !== ws.OPEN) return null;
  const userId = token ? await deps.apiKeys.resolve(token) : null;
  if (!userId) ws.close(CLOSE_BAD_AUTH, token ? 'invalid API key' : 'authentication required');
  return userId;
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

/**
 * Counts the socket among its user's open ones until it closes; false when the user holds as many as
 * USER_MAX_WEBSOCKETS already (then it is closed with 4429).
 */
function holdUserSocket({ deps, openByUser }: EventSockets, ws: WebSocket, userId: string): boolean {
  const open = openByUser.get(userId) ?? 0;
  if (deps.maxPerUser && open >= deps.maxPerUser) {
    ws.close(
      CLOSE_TOO_MANY,
      `${open} event sockets open, as many as one user may (USER_MAX_WEBSOCKETS=${deps.maxPerUser}); close one first`,
    );
    return false;
  }
  openByUser.set(userId, open + 1);
  ws.once('close', () => {
    const left = (openByUser.get(userId) ?? 1) - 1;
    if (left > 0) openByUser.set(userId, left);
    else openByUser.delete(userId);
  });
  return true;
}

/**
 * Where the socket's events start, from `after_id` or `resend_all`: after seq `afterSeq` (0: the whole
 * log; null: live events only). Null when a parameter is refused (then the socket is closed with 4000).
 */
async function startPosition(
  ws: WebSocket,
  events: EventsStore,
  conversationId: string,
  params: URLSearchParams,
): Promise<{ afterSeq: number | null } | null> {
  const afterId = params.get('after_id');
  const resendAll = params.get('resend_all');
  if (resendAll !== null && !['true', 'false'].includes(resendAll)) {
    ws.close(CLOSE_BAD_REQUEST, 'resend_all must be true or false');
    return null;
  }
  let afterSeq: number | null = null;
  if (resendAll === 'true') afterSeq = 0;
  else if (afterId) {
    afterSeq = await events.seqOf(conversationId, afterId);
    if (afterSeq === null) {
      ws.close(CLOSE_BAD_REQUEST, 'after_id is not an event of this conversation');
      return null;
    }
  }
  return { afterSeq };
}

/** Registers the socket's subscription with the hub, then catches it up from `afterSeq`. */
async function subscribe(
  ws: WebSocket,
  deps: EventSocketDeps,
  conversationId: string,
  blocks: EventLayout['blocks'],
  afterSeq: number | null,
): Promise<void> {
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
