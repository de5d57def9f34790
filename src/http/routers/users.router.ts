import { callerId } from '../state';
import type { UserSettingsService } from '../../orgs/user-settings-service';
import { ErrorResponseSchema } from '../../schemas/errors';
import { UserSchema } from '../../schemas/users';
import type { ApiRouter } from '../../web/route';

/** /api/v1/users: who the credential belongs to, in which organization, with which role. */
export function usersRoutes(router: ApiRouter, settings: UserSettingsService): ApiRouter {
  return router.route(
    {
      method: 'get',
      path: '/me',
      operationId: 'getCurrentUser',
      summary: 'The user behind the X-Access-Token',
      description:
        'With the active organization, the role there and its permissions, and a settings summary. Secrets are never shown.',
      security: 'APIKeyHeader',
      responses: {
        200: { description: 'The user', schema: UserSchema },
        404: { description: 'The key outlived its user', schema: ErrorResponseSchema },
      },
    },
    async (ctx) => {
      ctx.body = await settings.me(callerId(ctx));
    },
  );
}
