import { WebClientConfigSchema, type WebClientConfig } from '../../schemas/settings';
import type { ApiRouter } from '../../web/route';

/**
 * /api/v1/web-client: what a web client needs at boot. The published API answers it without a
 * credential; here every /api route takes one (the client has its API key before it boots).
 */
export function webClientRoutes(router: ApiRouter, config: WebClientConfig): ApiRouter {
  return router.route(
    {
      method: 'get',
      path: '/config',
      operationId: 'getWebClientConfig',
      summary: 'Feature flags, auth mode and limits for a web client',
      security: 'APIKeyHeader',
      responses: { 200: { description: 'The configuration', schema: WebClientConfigSchema } },
    },
    (ctx) => {
      ctx.body = config;
    },
  );
}
