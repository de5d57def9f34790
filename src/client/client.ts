/**
 * The typed client of the service: `api` is generated from the service's own OpenAPI document
 * (openapi-fetch over `generated/openapi.ts`); beside it, what a generated client cannot give: the
 * streamed start (`startConversation`) and the live event log (`events.tail`).
 */
import createClient, { type Client } from 'openapi-fetch';
import WebSocket from 'ws';
import { ApiError, UnreachableError } from './errors';
import type { components, paths } from './generated/openapi';
import { jsonArrayElements } from './json-array-stream';

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

/** The data of a generated call, or its error as an ApiError. */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
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
  readonly api: Client<paths>;
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly streamIdleMs: number;

  constructor(o: ClientOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.apiKey = o.apiKey;
    this.streamIdleMs = o.streamIdleMs ?? 60_000;
    const base = this.baseUrl;
    this.api = createClient<paths>({
      baseUrl: base,
      headers: { 'X-Access-Token': o.apiKey },
      fetch: async (req: Request) => {
        try {
          return await fetch(req);
        } catch (err) {
          if ((err as Error).name === 'AbortError') throw err;
          throw new UnreachableError(base, err);
        }
      },
    });
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
      const { data, error, response } = await this.api.POST('/api/v1/app-conversations/stream-start', {
        body: request as StartRequest,
        parseAs: 'stream',
        signal: abort.signal,
      });
      if (!response.ok || !data) throw new ApiError(response.status, 'POST', '/api/v1/app-conversations/stream-start', error);
      const body = data as unknown as AsyncIterable<Uint8Array>;
      const chunks = async function* () {
        for await (const c of body) {
          arm();
          yield c;
        }
      };
      for await (const task of jsonArrayElements(chunks())) yield task as StartTask;
    } catch (err) {
      if (timedOut) throw new UnreachableError(this.baseUrl, new Error(`no byte of the start stream for ${this.streamIdleMs} ms`));
      if (signal?.aborted) return;
      if (err instanceof ApiError || err instanceof UnreachableError) throw err;
      if ((err as Error).name === 'AbortError' || (err as Error).name === 'TypeError') throw new UnreachableError(this.baseUrl, err);
      throw err;
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
    search: (conversationId: string, query: NonNullable<paths['/api/v1/conversation/{conversation_id}/events/search']['get']['parameters']['query']> = {}) =>
      unwrap(this.api.GET('/api/v1/conversation/{conversation_id}/events/search', { params: { path: { conversation_id: conversationId }, query } })),
  };

  private async *tail(conversationId: string, o: TailOptions): AsyncGenerator<Event> {
    let lastId = o.afterId;
    if (!lastId && o.live) {
      const page = await this.events.search(conversationId, { sort_order: 'TIMESTAMP_DESC', limit: 1 });
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
      const conn = new SocketQueue(url, this.apiKey, o.signal);
      let received = false;
      let reason: string;
      try {
        for (;;) {
          const next = await conn.next();
          if (next.done) {
            reason = next.reason;
            break;
          }
          received = true;
          const e = next.event as Event & { id?: string; kind?: string };
          if (e.kind && UNSTORED.has(e.kind)) {
            yield e;
            continue;
          }
          if (e.id) {
            if (seen.has(e.id)) continue;
            seen.add(e.id);
            recent.push(e.id);
            if (recent.length > 10_000) seen.delete(recent.shift()!);
            lastId = e.id;
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
      if (received || conn.opened) {
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

/** One websocket connection as a pull queue; paused while its reader lags, every error handled. */
class SocketQueue {
  private readonly ws: WebSocket;
  private readonly queue: unknown[] = [];
  private ended: string | undefined;
  private wake: (() => void) | undefined;
  opened = false;
  closeCode: number | undefined;

  constructor(url: string, apiKey: string, private readonly signal?: AbortSignal) {
    this.ws = new WebSocket(url, { headers: { 'X-Access-Token': apiKey }, handshakeTimeout: 10_000, maxPayload: 16 << 20 });
    this.ws.on('open', () => (this.opened = true));
    this.ws.on('message', (data: Buffer) => {
      try {
        this.queue.push(JSON.parse(data.toString('utf8')));
      } catch {
        this.end('a message was not JSON');
        return;
      }
      if (this.queue.length >= 1000) this.ws.pause();
      this.poke();
    });
    this.ws.on('unexpected-response', (_req, res) => {
      this.closeCode = res.statusCode === 401 || res.statusCode === 403 ? 4001 : res.statusCode === 404 ? 4004 : undefined;
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

  private end(reason: string) {
    this.ended ??= reason;
    this.poke();
  }

  private poke() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async next(): Promise<Next> {
    for (;;) {
      if (this.queue.length) {
        const event = this.queue.shift();
        if (this.queue.length < 100 && this.ws.isPaused) this.ws.resume();
        return { done: false, event };
      }
      if (this.ended !== undefined) return { done: true, reason: this.ended };
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  close() {
    this.signal?.removeEventListener('abort', this.onAbort);
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
  }
}
