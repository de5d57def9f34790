/**
 * The live event log of a conversation (`events.tail`): over the websocket, reconnecting after the last
 * stored event yielded, so that no event is repeated or skipped.
 */
import { ApiError, ProtocolError, UnreachableError } from './errors';
import type { Event } from './schema-types';
import { SocketQueue } from './socket-queue';

export interface TailOptions {
  /** Resume after this event id; without it the whole log comes first (`resend_all`), unless `live`. */
  afterId?: string;
  /** Only events from now on (the latest stored id is read first, so a reconnect still misses none). */
  live?: boolean;
  signal?: AbortSignal;
  /**
   * How long to keep trying to reconnect before giving up with UnreachableError.
   * @default 120000
   */
  reconnectForMs?: number;
  /** Told of each reconnect (after the first connection), e.g. to show it. */
  onReconnect?: (attempt: number, reason: string) => void;
}

/** What the tail needs of the client. */
export interface TailSource {
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Longest silence of an open websocket before it counts as lost. */
  readonly socketLivenessMs: number;
  /** A page holding the newest stored event of the conversation (for `live`: the id to start after). */
  newestEvents(conversationId: string, signal?: AbortSignal): Promise<{ items: unknown }>;
}

/** Kinds the service publishes without storing them: they have no place in the log to resume from. */
const UNSTORED = new Set(['StreamingDeltaEvent']);

/** How many ids of stored events yielded are remembered, to drop a reconnect's repeat of one. */
const RECENT_IDS = 10_000;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** The events of `events.tail` (its comment says what comes, and when it ends or throws). */
export async function* tailEvents(source: TailSource, conversationId: string, o: TailOptions): AsyncGenerator<Event> {
  let lastId = o.afterId;
  if (!lastId && o.live) {
    lastId = await latestEventId(source, conversationId, o.signal);
    if (o.signal?.aborted) return;
  }
  const fromStart = !lastId && !o.live;
  const recent = new RecentIds();
  const reconnects = new Reconnects(o.reconnectForMs ?? 120_000);
  while (!o.signal?.aborted) {
    const url = eventSocketUrl(source.baseUrl, conversationId, lastId, fromStart);
    const conn = new SocketQueue(url, source.apiKey, source.socketLivenessMs, o.signal);
    let ended: ConnectionEnd;
    try {
      ended = yield* connectionEvents(conn, recent);
    } finally {
      conn.close();
    }
    lastId = ended.lastStoredId ?? lastId;
    if (o.signal?.aborted) return;
    const refused = refusal(conn.closeCode, url, conversationId, ended.reason);
    if (refused) throw refused;
    // A connection that brought an event, or stayed open a while, was a working one: the next failure
    // starts a new count. One the service opens and closes at once (1013: starting, 1011) does not.
    if (ended.lastStoredId !== undefined || conn.openForMs() >= 10_000) reconnects.reset();
    const attempt = reconnects.next();
    if (attempt === undefined) throw new UnreachableError(source.baseUrl, new Error(ended.reason));
    o.onReconnect?.(attempt, ended.reason);
    await sleep(Math.min(5_000, 100 * 2 ** Math.min(attempt, 6)), o.signal);
  }
}

/** The id of the newest stored event (undefined when there is none, or when `signal` aborted the asking). */
async function latestEventId(
  source: TailSource,
  conversationId: string,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const page = await source.newestEvents(conversationId, signal).catch((err: unknown) => {
    if (signal?.aborted) return undefined;
    throw err;
  });
  if (signal?.aborted) return undefined;
  if (!Array.isArray(page?.items))
    throw new ProtocolError(source.baseUrl, 'the latest event was asked for; the answer held no items');
  return (page.items[0] as { id?: string } | undefined)?.id;
}

function eventSocketUrl(baseUrl: string, conversationId: string, lastId: string | undefined, fromStart: boolean) {
  const query = lastId ? `?after_id=${encodeURIComponent(lastId)}` : fromStart ? '?resend_all=true' : '';
  return `${baseUrl.replace(/^http/, 'ws')}/api/v1/conversation/${encodeURIComponent(conversationId)}/events/socket${query}`;
}

interface ConnectionEnd {
  /** Why the connection ended. */
  reason: string;
  /** The last new stored event it brought (junk, repeats and unstored deltas are no progress). */
  lastStoredId: string | undefined;
}

/** The events of one connection, each stored one once; returns how the connection ended. */
async function* connectionEvents(conn: SocketQueue, recent: RecentIds): AsyncGenerator<Event, ConnectionEnd> {
  let lastStoredId: string | undefined;
  for (;;) {
    const next = await conn.next();
    if (next.done) return { reason: next.reason, lastStoredId };
    const e = next.event as Event & { id?: unknown; kind?: unknown };
    // Only objects of a kind are events; anything else on the socket is not the service's and is dropped.
    if (typeof e !== 'object' || e === null || typeof e.kind !== 'string') continue;
    if (UNSTORED.has(e.kind)) {
      yield e;
      continue;
    }
    if (typeof e.id === 'string' && e.id) {
      if (!recent.add(e.id)) continue;
      lastStoredId = e.id;
    }
    yield e;
  }
}

/** The service's refusals of the socket (its close codes 4001, 4004, 4000) as the errors of a call; undefined for a lost connection. */
function refusal(closeCode: number | undefined, url: string, conversationId: string, reason: string) {
  if (closeCode === 4001) return new ApiError(401, 'GET', url, { detail: 'the credential was refused' });
  if (closeCode === 4004) return new ApiError(404, 'GET', url, { detail: `no conversation ${conversationId}` });
  if (closeCode === 4000) return new ApiError(422, 'GET', url, { detail: reason });
  return undefined;
}

/** The ids of the last RECENT_IDS stored events yielded. */
class RecentIds {
  private readonly seen = new Set<string>();
  private readonly order: string[] = [];

  /** False when `id` was yielded already. */
  add(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    this.order.push(id);
    if (this.order.length > RECENT_IDS) this.seen.delete(this.order.shift()!);
    return true;
  }
}

/** The count of failed connections in a row, and since when they fail. */
class Reconnects {
  private attempt = 0;
  private failingSince: number | undefined;
  constructor(private readonly forMs: number) {}

  /** A connection worked: the next failure starts a new count. */
  reset() {
    this.attempt = 0;
    this.failingSince = undefined;
  }

  /** The number of the next attempt, or undefined once connections have failed for longer than `forMs`. */
  next(): number | undefined {
    this.failingSince ??= Date.now();
    if (Date.now() - this.failingSince > this.forMs) return undefined;
    return ++this.attempt;
  }
}
