/**
 * /api/v1/app-conversations (SPEC 4.2, 4.5): starting conversations (streamed or not), their start
 * tasks, and the caller's conversations. Everything is scoped to the caller.
 */
import type { ApiMetrics } from '../../observability/metrics';
import { callerId } from '../state';
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import { snapshotOf } from '../../app-conversations/start-task-snapshots';
import type { StartTaskService } from '../../app-conversations/start-task-service';
import {
  APP_CONVERSATIONS_LISTING,
  AppConversationCountQuerySchema,
  AppConversationPageSchema,
  AppConversationSchema,
  AppConversationSearchQuerySchema,
  START_TASKS_LISTING,
  StartRequestSchema,
  StartTaskCountQuerySchema,
  StartTaskPageSchema,
  StartTaskSchema,
  StartTaskSearchQuerySchema,
} from '../../schemas/app-conversations';
import type { AppConversationsStore } from '../../store/app-conversations-store';
import type { StartTasksStore } from '../../store/start-tasks-store';
import { encodeCursor } from '../../schemas/page-cursor';
import { type ApiRouter, errorResponse } from '../../web/route';
import type { ConversationViews } from '../../app-conversations/conversation-views';

const IdsSchema = z.object({
  ids: z.array(z.string().min(1).max(200)).min(1).max(100).meta({ description: 'Ids (1..100); repeat the parameter.' }),
});
const ListQuerySchema = AppConversationSearchQuerySchema.extend({ ids: IdsSchema.shape.ids.optional() });
/** How often a quiet stream-start writes a newline (valid JSON whitespace). */
const KEEP_ALIVE_MS = 15_000;
const date = (v: string | undefined) => (v === undefined ? undefined : new Date(v));

const startTaskFilters = (q: z.output<typeof StartTaskCountQuerySchema>) => ({
  conversationId: q.conversation_id__eq,
  createdAtGte: date(q.created_at__gte),
  createdAtLt: date(q.created_at__lt),
});

const conversationFilters = (q: z.output<typeof AppConversationCountQuerySchema>) => ({
  titleContains: q.title__contains,
  sandboxId: q.sandbox_id__eq,
  createdAtGte: date(q.created_at__gte),
  createdAtLt: date(q.created_at__lt),
  updatedAtGte: date(q.updated_at__gte),
  updatedAtLt: date(q.updated_at__lt),
});

/** A start past the caller's starts not ended or conversations kept (a start over the other quotas waits in line instead). */
const TOO_MANY_STARTS = errorResponse(
  'The caller has as many starts not ended (USER_MAX_PENDING_STARTS), or conversations with those they will make (USER_MAX_CONVERSATIONS), as one user may',
);

export function appConversationsRoutes(
  router: ApiRouter,
  deps: {
    starts: StartTaskService;
    startTasks: StartTasksStore;
    appConversations: AppConversationsStore;
    conversationViews: ConversationViews;
    metrics?: Pick<ApiMetrics, 'startStreams' | 'startStreamReads'>;
  },
): ApiRouter {
  const { starts, startTasks, appConversations, conversationViews: views } = deps;
  const searchPage = async (userId: string, query: z.output<typeof AppConversationSearchQuerySchema>) => {
    const field = query.sort_order.startsWith('UPDATED_AT') ? 'updated_at' : 'created_at';
    const order = query.sort_order.endsWith('DESC') ? 'desc' : 'asc';
    const page = await appConversations.search(
      userId,
      conversationFilters(query),
      { field, order },
      query.limit,
      query.page_id,
    );
    return {
      items: await views.many(userId, page.items),
      next_page_id: page.last && encodeCursor(APP_CONVERSATIONS_LISTING, page.last),
    };
  };
  return router
    .route(
      {
        method: 'post',
        path: '/stream-start',
        operationId: 'streamStartAppConversation',
        summary: 'Start a conversation and stream its start task until READY or ERROR',
        description:
          'The answer is a JSON array written as the start goes: `[`, each snapshot of the task as it happens, `]` at READY or ERROR. ' +
          'A client that goes away does not stop the start; read the task again with GET start-tasks?ids=. ' +
          'The same conversation_id sent again joins the first start.',
        security: 'APIKeyHeader',
        body: StartRequestSchema,
        responses: {
          200: { description: "The task's successive snapshots", schema: z.array(StartTaskSchema) },
          409: { description: 'conversation_id belongs to another user' },
          429: TOO_MANY_STARTS,
        },
      },
      async (ctx, { body }) => {
        const id = await starts.start(callerId(ctx), body);
        const stream = new PassThrough();
        let closed = false;
        ctx.res.once('close', () => (closed = true));
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = stream;
        stream.write('[');
        // A start can be silent for minutes (a sandbox coming up, a long setup script); whitespace between
        // the array's elements keeps proxies and clients from taking the quiet connection for a dead one.
        const keepAlive = setInterval(() => stream.write('\n'), KEEP_ALIVE_MS);
        deps.metrics?.startStreams.inc();
        let first = true;
        void starts
          .follow(
            id,
            (s) => {
              stream.write(`${first ? '' : ','}${JSON.stringify(s)}`);
              first = false;
            },
            () => closed,
            { onRead: (source) => deps.metrics?.startStreamReads.inc({ source }) },
          )
          .catch((e: Error) => ctx.state.log?.error({ err: e.message, task_id: id }, 'following a start failed'))
          .finally(() => {
            clearInterval(keepAlive);
            deps.metrics?.startStreams.dec();
            stream.end(']');
          });
      },
    )
    .route(
      {
        method: 'post',
        path: '',
        operationId: 'startAppConversation',
        summary: 'Start a conversation; answers its start task at once, and the start goes on',
        security: 'APIKeyHeader',
        body: StartRequestSchema,
        responses: {
          200: { description: 'The start task as accepted', schema: StartTaskSchema },
          409: { description: 'conversation_id belongs to another user' },
          429: TOO_MANY_STARTS,
        },
      },
      async (ctx, { body }) => {
        const id = await starts.start(callerId(ctx), body);
        ctx.body = snapshotOf((await startTasks.get(id))!);
      },
    )
    .route(
      {
        method: 'get',
        path: '/start-tasks',
        operationId: 'getStartTasks',
        summary: 'Start tasks by id',
        description: "One entry per id, in order: null for an id that does not exist or is not the caller's.",
        security: 'APIKeyHeader',
        query: IdsSchema,
        responses: { 200: { description: 'The tasks', schema: z.array(StartTaskSchema.nullable()) } },
      },
      async (ctx, { query }) => {
        const found = await startTasks.getManyOwned(query.ids, callerId(ctx));
        ctx.body = query.ids.map((id) => {
          const t = found.get(id);
          return t ? snapshotOf(t) : null;
        });
      },
    )
    .route(
      {
        method: 'get',
        path: '/start-tasks/search',
        operationId: 'searchStartTasks',
        summary: "Search the caller's start tasks",
        security: 'APIKeyHeader',
        query: StartTaskSearchQuerySchema,
        responses: { 200: { description: 'A page of tasks', schema: StartTaskPageSchema } },
      },
      async (ctx, { query }) => {
        const page = await startTasks.search(
          callerId(ctx),
          startTaskFilters(query),
          {
            field: query.sort_order.startsWith('UPDATED_AT') ? 'updated_at' : 'created_at',
            order: query.sort_order.endsWith('_DESC') ? 'desc' : 'asc',
          },
          query.limit,
          query.page_id,
        );
        ctx.body = {
          items: page.items.map(snapshotOf),
          next_page_id: page.last && encodeCursor(START_TASKS_LISTING, page.last),
        };
      },
    )
    .route(
      {
        method: 'get',
        path: '/start-tasks/count',
        operationId: 'countStartTasks',
        summary: "Count the caller's start tasks",
        security: 'APIKeyHeader',
        query: StartTaskCountQuerySchema,
        responses: { 200: { description: 'How many', schema: z.number().int() } },
      },
      async (ctx, { query }) => {
        ctx.body = await startTasks.count(callerId(ctx), startTaskFilters(query));
      },
    )
    .route(
      {
        method: 'get',
        path: '/search',
        operationId: 'searchAppConversations',
        summary: "Search the caller's conversations",
        security: 'APIKeyHeader',
        query: AppConversationSearchQuerySchema,
        responses: { 200: { description: 'A page of conversations', schema: AppConversationPageSchema } },
      },
      async (ctx, { query }) => {
        ctx.body = await searchPage(callerId(ctx), query);
      },
    )
    .route(
      {
        method: 'get',
        path: '/count',
        operationId: 'countAppConversations',
        summary: "Count the caller's conversations",
        security: 'APIKeyHeader',
        query: AppConversationCountQuerySchema,
        responses: { 200: { description: 'How many', schema: z.number().int() } },
      },
      async (ctx, { query }) => {
        ctx.body = await appConversations.count(callerId(ctx), conversationFilters(query));
      },
    )
    .route(
      {
        method: 'get',
        path: '',
        operationId: 'getAppConversations',
        summary: "The caller's conversations: by id, or a page of them",
        description:
          "With `ids`: one entry per id, in order, null for an id that does not exist or is not the caller's. " +
          'Without: the first page of the search, newest first (the search takes the same parameters).',
        security: 'APIKeyHeader',
        query: ListQuerySchema,
        responses: {
          200: {
            description: 'The conversations',
            schema: z.union([z.array(AppConversationSchema.nullable()), AppConversationPageSchema]),
          },
        },
      },
      async (ctx, { query }) => {
        const { ids, ...search } = query;
        if (!ids) {
          ctx.body = await searchPage(callerId(ctx), search);
          return;
        }
        const userId = callerId(ctx);
        const found = await appConversations.getManyOwned(ids, userId);
        const shown = new Map((await views.many(userId, [...found.values()])).map((v) => [v.id, v]));
        ctx.body = ids.map((id) => shown.get(id) ?? null);
      },
    );
}
