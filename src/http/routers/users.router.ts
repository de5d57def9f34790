import { callerId } from '../state';
import { ErrorResponseSchema } from '../../schemas/errors';
import { UserSchema } from '../../schemas/users';
import type { UsersStore } from '../../store/users-store';
import { notFound } from '../../web/errors';
import type { ApiRouter } from '../../web/route';

/** /api/v1/users: who the credential belongs to. */
export function usersRoutes(router: ApiRouter, users: UsersStore): ApiRouter {
  return router.route(
    {
      method: 'get',
      path: '/me',
      operationId: 'getCurrentUser',
      summary: 'The user behind the X-Access-Token',
      security: 'APIKeyHeader',
      responses: {
        200: { description: 'The user', schema: UserSchema },
        404: { description: 'The key outlived its user', schema: ErrorResponseSchema },
      },
    },
    async (ctx) => {
      const user = await users.get(callerId(ctx));
      if (!user) throw notFound('User not found');
      ctx.body = { id: user.id, email: user.email, current_org_id: user.current_org_id, created_at: user.created_at.toISOString() };
    },
  );
}
