import { z } from 'zod';
import type { Readiness } from '../readiness';
import type { ApiRouter } from '../../web/route';

const CheckSchema = z.union([z.object({ ok: z.literal(true) }), z.object({ ok: z.literal(false), error: z.string() })]);

export const HealthSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });
export const ReadinessSchema = z
  .object({ ready: z.boolean(), checks: z.object({ mongodb: CheckSchema, temporal: CheckSchema }) })
  .meta({ id: 'Readiness' });

/** The probes' paths: asked every few seconds, their successes are logged at debug. */
export const PROBE_PATHS = ['/health', '/ready'] as const;

/** GET /health: the process is alive. GET /ready: MongoDB and Temporal both answer. */
export function healthRoutes(router: ApiRouter, readiness: Readiness): ApiRouter {
  return router
    .route(
      {
        method: 'get',
        path: PROBE_PATHS[0],
        operationId: 'health',
        summary: 'Liveness: the api process is up',
        security: null,
        responses: { 200: { description: 'Alive', schema: HealthSchema } },
      },
      (ctx) => {
        ctx.body = { status: 'ok' };
      },
    )
    .route(
      {
        method: 'get',
        path: PROBE_PATHS[1],
        operationId: 'ready',
        summary: 'Readiness: MongoDB and Temporal both answer',
        security: null,
        responses: {
          200: { description: 'Ready to serve', schema: ReadinessSchema },
          503: { description: 'A dependency does not answer yet', schema: ReadinessSchema },
        },
      },
      async (ctx) => {
        const report = await readiness.report();
        ctx.status = report.ready ? 200 : 503;
        ctx.body = report;
      },
    );
}
