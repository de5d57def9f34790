/**
 * The typed client of the service: `api` is generated from the service's own OpenAPI document
 * (openapi-fetch over `generated/openapi.ts`); beside it, what a generated client cannot give: the
 * streamed start (`startConversation`) and the live event log (`events.tail`).
 */
import createClient, { type Client } from 'openapi-fetch';
import { boundedFetch } from './bounded-fetch';
import { ApiError, ProtocolError, UnreachableError } from './errors';
import { tailEvents, type TailOptions, type TailSource } from './event-tail';
import type { paths } from './generated/openapi';
import { jsonArrayElements, JsonArrayStreamError } from './json-array-stream';
import type { Event, StartRequest, StartTask } from './schema-types';
import { unwrap } from './unwrap';

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

export class AgentControlClient {
  /** Every operation of the service's OpenAPI document; each answer bounded in time and size. */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  private readonly streamIdleMs: number;
  /** The same operations unbounded but by the caller: for the streamed start, which has its own idle bound. */
  private readonly streaming: Client<paths>;
  private readonly tailSource: TailSource;

  constructor(o: ClientOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.streamIdleMs = o.streamIdleMs ?? 60_000;
    const common = { baseUrl: this.baseUrl, headers: { 'X-Access-Token': o.apiKey } };
    this.api = createClient<paths>({
      ...common,
      fetch: boundedFetch(this.baseUrl, {
        timeoutMs: o.requestTimeoutMs ?? 120_000,
        maxBytes: o.maxResponseBytes ?? 64 << 20,
      }),
    });
    this.streaming = createClient<paths>({ ...common, fetch: boundedFetch(this.baseUrl) });
    this.tailSource = {
      baseUrl: this.baseUrl,
      apiKey: o.apiKey,
      socketLivenessMs: o.socketLivenessMs ?? 75_000,
      newestEvents: (conversationId, signal) =>
        this.events.search(conversationId, { sort_order: 'TIMESTAMP_DESC', limit: 1 }, signal),
    };
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
    tail: (conversationId: string, o: TailOptions = {}): AsyncGenerator<Event> =>
      tailEvents(this.tailSource, conversationId, o),
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
}
