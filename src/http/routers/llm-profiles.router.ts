import { callerId } from '../state';
import type { LlmProfilesService } from '../../orgs/llm-profiles-service';
import {
  ActivateProfileResponseSchema,
  MAX_PROFILES_PER_USER,
  ProfileDetailResponseSchema,
  ProfileListResponseSchema,
  ProfileMutationResponseSchema,
  ProfileNameParamsSchema,
  RenameProfileRequestSchema,
  SaveProfileRequestSchema,
} from '../../schemas/llm-profiles';
import { errorResponse, type ApiRouter } from '../../web/route';

/** /api/v1/settings/profiles: the caller's saved LLM profiles (published API paths and bodies). */
export function llmProfilesRoutes(router: ApiRouter, profiles: LlmProfilesService): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: '',
        operationId: 'listProfiles',
        summary: 'Your saved LLM profiles (never a key) and the active one',
        security: 'APIKeyHeader',
        responses: { 200: { description: 'The profiles', schema: ProfileListResponseSchema } },
      },
      async (ctx) => {
        ctx.body = await profiles.list(callerId(ctx));
      },
    )
    .route(
      {
        method: 'get',
        path: '/:name',
        operationId: 'getProfile',
        summary: "A profile's LLM configuration, its secrets null",
        security: 'APIKeyHeader',
        params: ProfileNameParamsSchema,
        responses: {
          200: { description: 'The profile', schema: ProfileDetailResponseSchema },
          404: errorResponse('No profile of that name'),
        },
      },
      async (ctx, { params }) => {
        ctx.body = await profiles.get(callerId(ctx), params.name);
      },
    )
    .route(
      {
        method: 'post',
        path: '/:name',
        operationId: 'saveProfile',
        summary: 'Save an LLM configuration under a name (overwrites one of that name)',
        description: `With llm, that LLM (its key sealed); without, a copy of your current agent_settings.llm. At most ${MAX_PROFILES_PER_USER} profiles a user (409 past it).`,
        security: 'APIKeyHeader',
        params: ProfileNameParamsSchema,
        body: SaveProfileRequestSchema.nullable().optional(),
        responses: {
          201: { description: 'Saved', schema: ProfileMutationResponseSchema },
          409: errorResponse(`You have ${MAX_PROFILES_PER_USER} profiles, or your agent has no LLM to copy`),
        },
      },
      async (ctx, { params, body }) => {
        ctx.status = 201;
        ctx.body = await profiles.save(callerId(ctx), params.name, body ?? SaveProfileRequestSchema.parse({}));
      },
    )
    .route(
      {
        method: 'delete',
        path: '/:name',
        operationId: 'deleteProfile',
        summary: 'Delete a profile (a name without one is deleted too)',
        security: 'APIKeyHeader',
        params: ProfileNameParamsSchema,
        responses: { 200: { description: 'Deleted', schema: ProfileMutationResponseSchema } },
      },
      async (ctx, { params }) => {
        ctx.body = await profiles.delete(callerId(ctx), params.name);
      },
    )
    .route(
      {
        method: 'post',
        path: '/:name/activate',
        operationId: 'activateProfile',
        summary: "Make the profile's LLM your agent_settings.llm (your organization's fills what it leaves out)",
        security: 'APIKeyHeader',
        params: ProfileNameParamsSchema,
        responses: {
          200: { description: 'Activated', schema: ActivateProfileResponseSchema },
          404: errorResponse('No profile of that name'),
          409: errorResponse('Your agent takes no LLM (an ACP agent), or the profile does not fit your agent settings'),
        },
      },
      async (ctx, { params }) => {
        ctx.body = await profiles.activate(callerId(ctx), params.name);
      },
    )
    .route(
      {
        method: 'post',
        path: '/:name/rename',
        operationId: 'renameProfile',
        summary: 'Rename a profile; its id, key and active mark stay',
        security: 'APIKeyHeader',
        params: ProfileNameParamsSchema,
        body: RenameProfileRequestSchema,
        responses: {
          200: { description: 'Renamed', schema: ProfileMutationResponseSchema },
          404: errorResponse('No profile of that name'),
          409: errorResponse('Another profile has the new name'),
        },
      },
      async (ctx, { params, body }) => {
        ctx.body = await profiles.rename(callerId(ctx), params.name, body.new_name);
      },
    );
}
