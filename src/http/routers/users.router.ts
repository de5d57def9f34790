import { callerId } from '../state';
import type { UserSettingsService } from '../../orgs/user-settings-service';
import { UserSchema } from '../../schemas/users';
import { type ApiRouter, errorResponse } from '../../web/route';

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
        404: errorResponse('The key outlived its user'),
      },
    },
    async (ctx) => {
      ctx.body = await settings.me(callerId(ctx));
    },
  );
}
