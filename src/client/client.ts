/**
 * The typed client of the service: `api` is generated from the service's own OpenAPI document
 * (openapi-fetch over `generated/openapi.ts`); beside it, what a generated client cannot give: the
 * streamed start (`startConversation`) and the live event log (`events.tail`).
 */
import createClient, { type Client } from 'openapi-fetch';
import WebSocket from 'ws';
import { boundedFetch } from './bounded-fetch';
import { ApiError, ProtocolError, UnreachableError } from './errors';
import type { components, paths } from './generated/openapi';
import { jsonArrayElements, JsonArrayStreamError } from './json-array-stream';

export type Schemas = components['schemas'];
export type StartTask = Schemas['AppConversationStartTask'];
export type StartRequest = Schemas['AppConversationStartRequest'];
export type Event = Schemas['Event'];

export interface ClientOptions {
  /** The api's base URL, e.g. http://127.0.0.1:8000. */
  baseUrl: string;
  /** Sent as X-Access-Token. */
  apiKey: string;
  /**
   * Longest silence on a streamed start before it counts as lost (the service writes a keep-alive every 15 s).
   * @default 60000
   */
  streamIdleMs?: number;
  /**
   * Each call's whole answer within this many ms (streams excepted: they have `streamIdleMs` and the
   * websocket's liveness bound).
   * @default 120000
   */
  requestTimeoutMs?: number;
  /**
   * The largest answer read; a larger one is ProtocolError.
   * @default 67108864 (64 MiB)
   */
  maxResponseBytes?: number;
  /**
   * Longest time an open websocket may go without a ping or message from the service (it pings every
   * 30 s) before it counts as lost and is opened again.
   * @default 75000
   */
  socketLivenessMs?: number;
}

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

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a generated call, or its error as an ApiError (ProtocolError for an answer that is not JSON). */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call.catch((err: unknown) => {
    throw err instanceof SyntaxError
      ? new ProtocolError('the service', `an answer that is not JSON (${err.message.slice(0, 120)})`)
      : err;
  });
  if (!response.ok || error !== undefined) {
    throw new ApiError(response.status, 'HTTP', new URL(response.url || 'http://x/').pathname, error);
  }
  return data as T;
}

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

/** Kinds the service publishes without storing them: they have no place in the log to resume from. */
const UNSTORED = new Set(['StreamingDeltaEvent']);

export class AgentControlClient {
  /** Every operation of the service's OpenAPI document; each answer bounded in time and size. */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly streamIdleMs: number;
  private readonly socketLivenessMs: number;
  /** The same operations unbounded but by the caller: for the streamed start, which has its own idle bound. */
  private readonly streaming: Client<paths>;

  constructor(o: ClientOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.apiKey = o.apiKey;
    this.streamIdleMs = o.streamIdleMs ?? 60_000;
    this.socketLivenessMs = o.socketLivenessMs ?? 75_000;
    const common = { baseUrl: this.baseUrl, headers: { 'X-Access-Token': o.apiKey } };
    this.api = createClient<paths>({
      ...common,
      fetch: boundedFetch(this.baseUrl, {
        timeoutMs: o.requestTimeoutMs ?? 120_000,
        maxBytes: o.maxResponseBytes ?? 64 << 20,
      }),
    });
    this.streaming = createClient<paths>({ ...common, fetch: boundedFetch(this.baseUrl) });
  }

  /**
   * Starts a conversation through POST /api/v1/app-conversations/stream-start and yields each snapshot of
   * its start task as the service writes it, READY or ERROR last. Breaking out of the loop (or aborting)
   * closes the stream; the start itself goes on in the service.
   */
  async *startConversation(request: Partial<StartRequest>, signal?: AbortSignal): AsyncGenerator<StartTask> {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let idle: NodeJS.Timeout | undefined;
    let timedOut = false;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        timedOut = true;
        abort.abort();
      }, this.streamIdleMs);
    };
    try {
      arm();
      const { data, error, response } = await this.streaming.POST('/api/v1/app-conversations/stream-start', {
        body: request as StartRequest,
        parseAs: 'stream',
        signal: abort.signal,
      });
      if (!response.ok || !data)
        throw new ApiError(response.status, 'POST', '/api/v1/app-conversations/stream-start', error);
      const body = data as unknown as AsyncIterable<Uint8Array>;
      const chunks = async function* () {
        for await (const c of body) {
          arm();
          yield c;
        }
      };
      for await (const task of jsonArrayElements(chunks())) yield task as StartTask;
    } catch (err) {
      if (timedOut)
        throw new UnreachableError(this.baseUrl, new Error(`no byte of the start stream for ${this.streamIdleMs} ms`));
      if (signal?.aborted) return;
      if (err instanceof ApiError || err instanceof UnreachableError || err instanceof ProtocolError) throw err;
      if (err instanceof JsonArrayStreamError)
        throw new ProtocolError(this.baseUrl, `the start stream: ${err.message}`);
      // The body cut (reset, aborted): the stream is lost, the start goes on in the service.
      throw new UnreachableError(this.baseUrl, err);
    } finally {
      clearTimeout(idle);
      signal?.removeEventListener('abort', onAbort);
      abort.abort();
    }
  }

  readonly events = {
    /**
     * Every event of a conversation in append order, then each new one as it is stored, over the
     * websocket. A dropped connection is opened again with `after_id` = the last stored event yielded, so
     * no event is repeated or skipped. Ends when `signal` aborts; throws ApiError for a bad credential (401)
     * or an unknown conversation (404), UnreachableError once reconnecting has failed for `reconnectForMs`.
     */
    tail: (conversationId: string, o: TailOptions = {}): AsyncGenerator<Event> => this.tail(conversationId, o),
    /** One page of stored events (GET .../events/search). */
    search: (
      conversationId: string,
      query: NonNullable<
        paths['/api/v1/conversation/{conversation_id}/events/search']['get']['parameters']['query']
      > = {},
      signal?: AbortSignal,
    ) =>
      unwrap(
        this.api.GET('/api/v1/conversation/{conversation_id}/events/search', {
          params: { path: { conversation_id: conversationId }, query },
          signal,
        }),
      ),
  };

  private async *tail(conversationId: string, o: TailOptions): AsyncGenerator<Event> {
    let lastId = o.afterId;
    if (!lastId && o.live) {
      const page = await this.events
        .search(conversationId, { sort_order: 'TIMESTAMP_DESC', limit: 1 }, o.signal)
        .catch((err: unknown) => {
          if (o.signal?.aborted) return undefined;
          throw err;
        });
      if (o.signal?.aborted) return;
      if (!Array.isArray(page?.items))
        throw new ProtocolError(this.baseUrl, 'the latest event was asked for; the answer held no items');
      lastId = (page.items[0] as { id?: string } | undefined)?.id;
    }
    const fromStart = !lastId && !o.live;
    const recent: string[] = [];
    const seen = new Set<string>();
    let attempt = 0;
    let failingSince: number | undefined;
    const reconnectForMs = o.reconnectForMs ?? 120_000;
    while (!o.signal?.aborted) {
      const query = lastId ? `?after_id=${encodeURIComponent(lastId)}` : fromStart ? '?resend_all=true' : '';
      const url = `${this.baseUrl.replace(/^http/, 'ws')}/api/v1/conversation/${encodeURIComponent(conversationId)}/events/socket${query}`;
      const conn = new SocketQueue(url, this.apiKey, this.socketLivenessMs, o.signal);
      /** A new stored event came on this connection (junk, repeats and unstored deltas are no progress). */
      let advanced = false;
      let reason: string;
      try {
        for (;;) {
          const next = await conn.next();
          if (next.done) {
            reason = next.reason;
            break;
          }
          const e = next.event as Event & { id?: unknown; kind?: unknown };
          // Only objects of a kind are events; anything else on the socket is not the service's and is dropped.
          if (typeof e !== 'object' || e === null || typeof e.kind !== 'string') continue;
          if (UNSTORED.has(e.kind)) {
            yield e;
            continue;
          }
          if (typeof e.id === 'string' && e.id) {
            if (seen.has(e.id)) continue;
            seen.add(e.id);
            recent.push(e.id);
            if (recent.length > 10_000) seen.delete(recent.shift()!);
            lastId = e.id;
            advanced = true;
          }
          yield e;
        }
      } finally {
        conn.close();
      }
      if (o.signal?.aborted) return;
      if (conn.closeCode === 4001) throw new ApiError(401, 'GET', url, { detail: 'the credential was refused' });
      if (conn.closeCode === 4004) throw new ApiError(404, 'GET', url, { detail: `no conversation ${conversationId}` });
      if (conn.closeCode === 4000) throw new ApiError(422, 'GET', url, { detail: reason });
      // A connection that brought an event, or stayed open a while, was a working one: the next failure
      // starts a new count. One the service opens and closes at once (1013: starting, 1011) does not.
      if (advanced || conn.openForMs() >= 10_000) {
        attempt = 0;
        failingSince = undefined;
      }
      failingSince ??= Date.now();
      if (Date.now() - failingSince > reconnectForMs) throw new UnreachableError(this.baseUrl, new Error(reason));
      attempt++;
      o.onReconnect?.(attempt, reason);
      await sleep(Math.min(5_000, 100 * 2 ** Math.min(attempt, 6)), o.signal);
    }
  }
}

type Next = { done: false; event: unknown } | { done: true; reason: string };

/** What a socket may hold unread before it is paused: messages, and their bytes. */
const QUEUE_MAX = { messages: 1000, bytes: 8 << 20 };

/**
 * One websocket connection as a pull queue; paused while its reader lags, every error handled, and ended
 * when the service goes silent (no ping or message within `livenessMs`: a half-open connection).
 */
class SocketQueue {
  private readonly ws: WebSocket;
  private readonly queue: { event: unknown; bytes: number }[] = [];
  private queuedBytes = 0;
  private ended: string | undefined;
  private wake: (() => void) | undefined;
  private openedAt: number | undefined;
  private silence: NodeJS.Timeout | undefined;
  closeCode: number | undefined;

  constructor(
    url: string,
    apiKey: string,
    private readonly livenessMs: number,
    private readonly signal?: AbortSignal,
  ) {
    this.ws = new WebSocket(url, {
      headers: { 'X-Access-Token': apiKey },
      handshakeTimeout: 10_000,
      maxPayload: 16 << 20,
    });
    this.ws.on('open', () => {
      this.openedAt = Date.now();
      this.heard();
    });
    this.ws.on('ping', () => this.heard());
    this.ws.on('message', (data: Buffer) => {
      this.heard();
      try {
        this.queue.push({ event: JSON.parse(data.toString('utf8')), bytes: data.length });
      } catch {
        this.end('a message was not JSON');
        return;
      }
      this.queuedBytes += data.length;
      if (this.queue.length >= QUEUE_MAX.messages || this.queuedBytes >= QUEUE_MAX.bytes) this.ws.pause();
      this.poke();
    });
    this.ws.on('unexpected-response', (_req, res) => {
      this.closeCode =
        res.statusCode === 401 || res.statusCode === 403 ? 4001 : res.statusCode === 404 ? 4004 : undefined;
      this.end(`the upgrade answered ${res.statusCode}`);
      res.resume();
      this.ws.terminate();
    });
    this.ws.on('error', (err) => this.end(err.message));
    this.ws.on('close', (code, why) => {
      this.closeCode ??= code;
      this.end(`closed ${code}${why.length ? ` ${why.toString()}` : ''}`);
    });
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = () => this.end('aborted');

  /** How long the connection has been open (0 if it never opened). */
  openForMs(): number {
    return this.openedAt === undefined ? 0 : Date.now() - this.openedAt;
  }

  /** The service spoke: the silence bound starts again. */
  private heard() {
    clearTimeout(this.silence);
    if (this.ended !== undefined) return; // over: no timer left behind (a ping after an abort)
    this.silence = setTimeout(() => {
      if (this.ws.isPaused) return this.heard(); // our reader lags, not the service: nothing read, no ping seen
      this.end(`no ping or message from the service for ${this.livenessMs} ms`);
      this.ws.terminate();
    }, this.livenessMs);
  }

  private end(reason: string) {
    this.ended ??= reason;
    clearTimeout(this.silence);
    this.poke();
  }

  private poke() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async next(): Promise<Next> {
    for (;;) {
      const head = this.queue.shift();
      if (head) {
        this.queuedBytes -= head.bytes;
        if (this.ws.isPaused && this.queue.length < QUEUE_MAX.messages / 10 && this.queuedBytes < QUEUE_MAX.bytes / 8)
          this.ws.resume();
        return { done: false, event: head.event };
      }
      if (this.ended !== undefined) return { done: true, reason: this.ended };
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  close() {
    clearTimeout(this.silence);
    this.signal?.removeEventListener('abort', this.onAbort);
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
  }
}
