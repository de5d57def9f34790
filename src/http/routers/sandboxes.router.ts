import { callerId } from '../state';
import { z } from 'zod';
import type { SandboxService } from '../../sandboxes/sandbox-service';
import { dateTimeQuery, pageLimit } from '../../schemas/common';
import { SandboxPageSchema, SandboxSchema, SandboxStatusSchema } from '../../schemas/sandboxes';
import type { SandboxesStore } from '../../store/sandboxes-store';
import type { SecretBox } from '../../auth/secret-box';
import { sandboxView } from '../../sandboxes/sandbox-view';
import { encodeCursor, pageIdParam } from '../../schemas/page-cursor';
import { errorResponse, type ApiRouter, type ResponseSpec, type RouteContext } from '../../web/route';
import { answerWaitMs } from '../../web/answer-deadline';

const LISTING = 'sandboxes';
const sandboxId = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,100}$/, { error: 'a sandbox id: 1-100 letters, digits, ".", "_" or "-"' });
const SandboxPathSchema = z.object({ id: sandboxId });
const specId = z
  .string()
  .min(1)
  .max(100)
  .meta({ description: 'The spec to start from; the default spec when omitted.' });

const CreateSandboxBodySchema = z
  .strictObject({ sandbox_spec_id: specId.optional() })
  .optional()
  .meta({ id: 'CreateSandboxRequest' });

const SearchQuerySchema = z.object({
  status__eq: SandboxStatusSchema.optional().meta({
    description: 'Keep only sandboxes in this status (DELETED ones are listed only so).',
  }),
  sandbox_spec_id__eq: z.string().min(1).max(100).optional(),
  created_at__gte: dateTimeQuery('Created at or after this time.'),
  created_at__lt: dateTimeQuery('Created before this time.'),
  page_id: pageIdParam(LISTING, z.tuple([z.number().int(), z.string()]))
    .optional()
    .meta({ type: 'string', description: 'The next_page_id of the previous page.' }),
  limit: pageLimit(),
});

const TOO_MANY_SANDBOXES = errorResponse(
  "As many sandboxes starting or running as the caller (USER_MAX_RUNNING_SANDBOXES) or the caller's organization may hold: pause or delete one first",
);

/**
 * Time kept for the rest of an answer once an operation's result was waited for: reading the sandbox
 * again and writing the answer, under the request's deadline.
 */
const ANSWER_MARGIN_MS = 1_500;

const TAKEN: ResponseSpec = {
  description:
    "Taken: the sandbox's workflow accepted the operation and is carrying it out (starting or stopping a runtime " +
    'can outlast the answer deadline, ANSWER_DEADLINE_MS). The body is the sandbox as it is now; read it again ' +
    'until its status shows the result.',
  schema: SandboxSchema,
};

/** Pause, resume or delete, answered 200 when done within the request's deadline, else 202 (taken). */
async function operateAnswer(
  ctx: RouteContext,
  service: SandboxService,
  id: string,
  op: Parameters<SandboxService['operate']>[2],
): Promise<void> {
  const waitMs = answerWaitMs(ctx.state, ANSWER_MARGIN_MS);
  const outcome = await service.operate(callerId(ctx), id, op, {
    resultBy: waitMs === undefined ? undefined : Date.now() + waitMs,
  });
  ctx.status = outcome.finished ? 200 : 202;
  ctx.body = outcome.sandbox;
}

const operation = (op: 'pause' | 'resume', summary: string) => ({
  method: 'post' as const,
  path: `/:id/${op}`,
  operationId: `${op}Sandbox`,
  summary,
  security: 'APIKeyHeader' as const,
  params: SandboxPathSchema,
  responses: {
    200: { description: 'The sandbox after the operation', schema: SandboxSchema },
    202: TAKEN,
    404: errorResponse('No such sandbox of the caller'),
    409: errorResponse('Not possible in the current status (deleted; pausing a sandbox in ERROR)'),
    ...(op === 'resume' ? ({ 429: TOO_MANY_SANDBOXES } as Record<number, ResponseSpec>) : {}),
    502: errorResponse('The provider could not carry it out; the sandbox status says where it stands'),
    503: errorResponse(
      'No worker answered within WORKFLOW_ANSWER_TIMEOUT_MS; it may still happen: read the sandbox again. ' +
        "Or the sandbox's workflow is failing its workflow tasks: the operation was not taken; try again later (Retry-After)",
    ),
  },
});

/** /api/v1/sandboxes (SPEC 4.4, 4.5): the caller's sandboxes. */
export function sandboxesRoutes(
  router: ApiRouter,
  deps: { service: SandboxService; sandboxes: SandboxesStore; box: SecretBox },
): ApiRouter {
  const { service } = deps;
  return router
    .route(
      {
        method: 'post',
        path: '',
        operationId: 'startSandbox',
        summary: 'Start a sandbox',
        description:
          'Answers at once with the sandbox in STARTING; its workflow brings it to RUNNING (or ERROR, with status_detail). ' +
          'The spec id may be given in the body or as the `sandbox_spec_id` query parameter.',
        security: 'APIKeyHeader',
        query: z.object({ sandbox_spec_id: specId.optional() }),
        body: CreateSandboxBodySchema,
        responses: {
          200: { description: 'The new sandbox', schema: SandboxSchema },
          403: errorResponse(
            'A process sandbox, which this installation does not isolate, for a user its operator does not list in SANDBOX_PROCESS_USERS',
          ),
          409: errorResponse(
            'No worker of this installation can run the spec (every worker host heard from lately said so, and why: an OpenHands agent server it does not have, say)',
          ),
          429: TOO_MANY_SANDBOXES,
          503: errorResponse('Temporal did not accept the start'),
        },
      },
      async (ctx, { query, body }) => {
        const fromBody = body?.sandbox_spec_id;
        ctx.body = await service.create(
          callerId(ctx),
          fromBody ?? query.sandbox_spec_id,
          fromBody !== undefined ? 'body' : 'query',
        );
      },
    )
    .route(
      {
        method: 'get',
        path: '/search',
        operationId: 'searchSandboxes',
        summary: "Search the caller's sandboxes, newest first",
        security: 'APIKeyHeader',
        query: SearchQuerySchema,
        responses: { 200: { description: 'A page of sandboxes', schema: SandboxPageSchema } },
      },
      async (ctx, { query }) => {
        const page = await deps.sandboxes.search(
          callerId(ctx),
          {
            status: query.status__eq,
            sandboxSpecId: query.sandbox_spec_id__eq,
            createdAtGte: query.created_at__gte === undefined ? undefined : new Date(query.created_at__gte),
            createdAtLt: query.created_at__lt === undefined ? undefined : new Date(query.created_at__lt),
          },
          query.limit,
          query.page_id,
        );
        ctx.body = {
          items: page.items.map((r) => sandboxView(r, deps.box)),
          next_page_id: page.last && encodeCursor(LISTING, page.last),
        };
      },
    )
    .route(
      {
        method: 'get',
        path: '',
        operationId: 'getSandboxes',
        summary: 'Get sandboxes by id',
        description: "One entry per id, in order: null for an id that does not exist or is not the caller's.",
        security: 'APIKeyHeader',
        query: z.object({
          id: z.array(sandboxId).min(1).max(100).meta({ description: 'Sandbox ids (1..100); repeat the parameter.' }),
        }),
        responses: { 200: { description: 'The sandboxes', schema: z.array(SandboxSchema.nullable()) } },
      },
      async (ctx, { query }) => {
        ctx.body = await service.getMany(callerId(ctx), query.id);
      },
    )
    .route(operation('pause', 'Pause a sandbox (a no-op when it is PAUSED)'), async (ctx, { params }) => {
      await operateAnswer(ctx, service, params.id, 'pause');
    })
    .route(
      operation('resume', 'Resume a sandbox; a runtime that is gone is started again'),
      async (ctx, { params }) => {
        await operateAnswer(ctx, service, params.id, 'resume');
      },
    )
    .route(
      {
        method: 'delete',
        path: '/:id',
        operationId: 'deleteSandbox',
        summary: 'Delete a sandbox: its runtime and storage are removed; the record stays as DELETED',
        security: 'APIKeyHeader',
        params: SandboxPathSchema,
        responses: {
          200: { description: 'The deleted sandbox', schema: SandboxSchema },
          202: TAKEN,
          404: errorResponse('No such sandbox of the caller'),
          502: errorResponse('The provider could not remove it; try again'),
          503: errorResponse(
            'No worker answered within WORKFLOW_ANSWER_TIMEOUT_MS; it may still happen: read the sandbox again. ' +
              "Or the sandbox's workflow is failing its workflow tasks: the deletion was not taken; try again later (Retry-After)",
          ),
        },
      },
      async (ctx, { params }) => {
        await operateAnswer(ctx, service, params.id, 'delete');
      },
    );
}
