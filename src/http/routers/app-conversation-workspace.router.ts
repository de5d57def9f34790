/**
 * /api/v1/app-conversations/{conversation_id}/...: what the conversation's agent works on, read through
 * the control plane: a workspace file, the git changes and diffs of its repository (from the sandbox's
 * runtime, which confines every path to the workspace), and the skills and hooks it was started with.
 * The workspace views need the sandbox running; a paused one is not resumed to read it (409).
 */
import { z } from 'zod';
import type { ConversationService } from '../../app-conversations/conversation-service';
import {
  ConversationPathSchema,
  FileQuerySchema,
  GitChangeSchema,
  GitChangesQuerySchema,
  GitDiffQuerySchema,
  GitDiffSchema,
  HookEventResponseSchema,
  SkillResponseSchema,
} from '../../schemas/app-conversation-actions';
import type { AppConversationRecord } from '../../store/app-conversations-store';
import { errorResponse, type ApiRouter } from '../../web/route';
import { callerId } from '../state';

const workspaceErrors = {
  400: errorResponse('A path outside the workspace, a file too large, or not a git repository'),
  404: errorResponse('No such conversation of the caller'),
  409: errorResponse('The sandbox is paused or gone: resume it first'),
  503: errorResponse("The sandbox's agent server did not answer in time"),
};

/** The reference's skill types: no trigger is a repository skill, else a knowledge skill. */
const skillsView = (c: AppConversationRecord) =>
  c.skills.map((s) => ({
    name: s.name,
    type: s.triggers.length === 0 ? ('repo' as const) : ('knowledge' as const),
    content: s.content,
    triggers: s.triggers,
  }));

/** Hooks by type, as the reference shows them: one matcher entry per hook. */
const hooksView = (c: AppConversationRecord) =>
  Object.entries(c.hooks)
    .filter(([, hooks]) => hooks.length > 0)
    .map(([eventType, hooks]) => ({
      event_type: eventType,
      matchers: hooks.map((h) => ({
        matcher: h.matcher,
        hooks: [{ type: 'command', command: h.command, timeout: h.timeout, async: false }],
      })),
    }));

export function appConversationWorkspaceRoutes(
  router: ApiRouter,
  deps: { conversationService: ConversationService },
): ApiRouter {
  const service = deps.conversationService;
  return router
    .route(
      {
        method: 'get',
        path: '/:conversation_id/file',
        operationId: 'readConversationFile',
        summary: "A file of the conversation's workspace, as text ('' when there is no such file)",
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: FileQuerySchema,
        responses: { 200: { description: "The file's text", schema: z.string() }, ...workspaceErrors },
      },
      async (ctx, { params, query }) => {
        ctx.body = JSON.stringify(await service.readFile(callerId(ctx), params.conversation_id, query.file_path));
        ctx.type = 'application/json';
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/git/changes',
        operationId: 'getConversationGitChanges',
        summary: 'The changed files of a git repository in the workspace (against HEAD, or `ref`)',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: GitChangesQuerySchema,
        responses: { 200: { description: 'The changes', schema: z.array(GitChangeSchema) }, ...workspaceErrors },
      },
      async (ctx, { params, query }) => {
        ctx.body = await service.gitChanges(callerId(ctx), params.conversation_id, query.path, query.ref);
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/git/diff',
        operationId: 'getConversationGitDiff',
        summary: 'One file before (at HEAD, or `ref`) and now',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        query: GitDiffQuerySchema,
        responses: {
          200: { description: 'Both versions (null where the file does not exist)', schema: GitDiffSchema },
          ...workspaceErrors,
        },
      },
      async (ctx, { params, query }) => {
        ctx.body = await service.gitDiff(callerId(ctx), params.conversation_id, query.path, query.ref);
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/skills',
        operationId: 'getConversationSkills',
        summary: 'The skills the conversation was started with',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        responses: {
          200: { description: 'Its skills', schema: z.object({ skills: z.array(SkillResponseSchema) }) },
          404: workspaceErrors[404],
        },
      },
      async (ctx, { params }) => {
        ctx.body = { skills: skillsView(await service.owned(callerId(ctx), params.conversation_id)) };
      },
    )
    .route(
      {
        method: 'get',
        path: '/:conversation_id/hooks',
        operationId: 'getConversationHooks',
        summary: 'The agent hooks the conversation was started with, by event type',
        security: 'APIKeyHeader',
        params: ConversationPathSchema,
        responses: {
          200: { description: 'Its hooks', schema: z.object({ hooks: z.array(HookEventResponseSchema) }) },
          404: workspaceErrors[404],
        },
      },
      async (ctx, { params }) => {
        ctx.body = { hooks: hooksView(await service.owned(callerId(ctx), params.conversation_id)) };
      },
    );
}
