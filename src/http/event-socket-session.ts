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

/**
 * Who subscribes to what, from where: settled before the socket opens when its key comes in the header,
 * so that every event stored after a client saw the socket open reaches it; after the first frame otherwise.
 */
export type Admission =
  { userId: string; blocks: EventLayout['blocks']; afterSeq: number } | { refused: { code: number; reason: string } };

/**
 * The admission of a socket whose key is in its X-Access-Token header, looked up while the upgrade waits;
 * null when the key is to come in a first frame or the api is not ready (then the socket opens at once).
 */
export function admitBeforeOpen(
  { deps }: EventSockets,
  req: http.IncomingMessage,
  encodedId: string,
  params: URLSearchParams,
): Promise<Admission> | null {
  const token = headerToken(req);
  const conversationId = decodeId(encodedId);
  if (!token || conversationId === null || (deps.ready && !deps.ready())) return null;
  return admit(deps, token, conversationId, params);
}

/**
 * Serves a socket ws has accepted for the conversation in the path (still percent-encoded), with the
 * admission looked up before it opened, if any.
 */
export function openEventSocket(
  sockets: EventSockets,
  ws: WebSocket,
  req: http.IncomingMessage,
  encodedId: string,
  params: URLSearchParams,
  early: Promise<Admission> | null = null,
): void {
  const { deps } = sockets;
  // Protocol errors of the peer (a frame over maxPayload: 1009; a malformed frame: 1002) close this
  // socket, which ws does itself; an unhandled 'error' event would end the process.
  ws.on('error', (err: Error & { code?: string }) =>
    deps.log.debug({ err: err.message, code: err.code }, 'event socket protocol error'),
  );
  void serve(sockets, ws, req, encodedId, params, early).catch((e: unknown) => {
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
  encodedId: string,
  params: URLSearchParams,
  early: Promise<Admission> | null,
): Promise<void> {
  const { deps, alive } = sockets;
  // Until the api has prepared its database (indexes, the live channel), live events would not reach
  // a subscriber: it is told to come back before anything is looked up.
  if (!early && deps.ready && !deps.ready())
    return ws.close(CLOSE_TRY_AGAIN_LATER, 'the service is starting; try again shortly');
  const conversationId = decodeId(encodedId);
  if (conversationId === null)
    return ws.close(CLOSE_BAD_REQUEST, 'conversation_id is not a valid percent-encoded path segment');
  alive.set(ws, true);
  ws.on('pong', () => alive.set(ws, true));
  const admission = await (early ?? admitAfterOpen(ws, req, deps, conversationId, params));
  if (!admission || ws.readyState !== ws.OPEN) return;
  if ('refused' in admission) return ws.close(admission.refused.code, admission.refused.reason);
  if (!holdUserSocket(sockets, ws, admission.userId)) return;
  await subscribe(ws, deps, conversationId, admission.blocks, admission.afterSeq);
}

/**
 * The admission of a socket looked up once it is open (its key in the header, or else in its first frame);
 * null when the socket closed meanwhile.
 */
async function admitAfterOpen(
  ws: WebSocket,
  req: http.IncomingMessage,
  deps: EventSocketDeps,
  conversationId: string,
  params: URLSearchParams,
): Promise<Admission | null> {
  const token = headerToken(req) ?? (await firstFrameToken(ws, deps.authTimeoutMs ?? 10_000));
  if (ws.readyState !== ws.OPEN) return null;
  return admit(deps, token, conversationId, params);
}

function decodeId(encodedId: string): string | null {
  try {
    return decodeURIComponent(encodedId);
  } catch {
    return null;
  }
}

function headerToken(req: http.IncomingMessage): string | null {
  const token = req.headers['x-access-token'];
  return typeof token === 'string' && token ? token : null;
}

/**
 * The user the key names, the conversation (theirs), and where its events start; or why the socket is to
 * be closed: 4000 (a bad parameter), 4001 (no valid key), 4004 (not found or someone else's).
 */
async function admit(
  deps: EventSocketDeps,
  token: string | null,
  conversationId: string,
  params: URLSearchParams,
): Promise<Admission> {
  const userId = token ? await deps.apiKeys.resolve(token) : null;
  if (!userId) return refused(CLOSE_BAD_AUTH, token ? 'invalid API key' : 'authentication required');
  const conversation = await deps.conversations.getOwned(conversationId, userId);
  if (!conversation) return refused(CLOSE_NOT_FOUND, 'conversation not found');
  const start = await startPosition(deps.events, conversationId, params);
  if ('refused' in start) return start;
  // A log in blocks stays so (a migration only adds them): the catch-up reads blocks for good.
  // Live only: from the last event stored when the conversation was read, before the socket opened.
  return { userId, blocks: conversation.layout.blocks, afterSeq: start.afterSeq ?? conversation.layout.lastSeq };
}

const refused = (code: number, reason: string): Admission => ({ refused: { code, reason } });

/** The token of a first frame {"type":"auth","access_token":...} within the time limit; null otherwise. */
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
 * log; null: live events only), or why a parameter is refused (4000).
 */
async function startPosition(
  events: EventsStore,
  conversationId: string,
  params: URLSearchParams,
): Promise<{ afterSeq: number | null } | Extract<Admission, { refused: unknown }>> {
  const afterId = params.get('after_id');
  const resendAll = params.get('resend_all');
  if (resendAll !== null && !['true', 'false'].includes(resendAll))
    return { refused: { code: CLOSE_BAD_REQUEST, reason: 'resend_all must be true or false' } };
  if (resendAll === 'true') return { afterSeq: 0 };
  if (!afterId) return { afterSeq: null };
  const afterSeq = await events.seqOf(conversationId, afterId);
  if (afterSeq === null)
    return { refused: { code: CLOSE_BAD_REQUEST, reason: 'after_id is not an event of this conversation' } };
  return { afterSeq };
}

/** Registers the socket's subscription with the hub, then catches it up from `afterSeq`. */
async function subscribe(
  ws: WebSocket,
  deps: EventSocketDeps,
  conversationId: string,
  blocks: EventLayout['blocks'],
  afterSeq: number,
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
