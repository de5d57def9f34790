/**
 * Gives every request an id (echoed in X-Request-Id) and a child logger, and logs one line when it ends.
 * The answers of `probePaths` (liveness and readiness, asked every few seconds by a supervisor or an
 * orchestrator) are logged at debug while they succeed, so they do not drown the log.
 */
import type { Middleware } from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContext(logger: Logger, probePaths: readonly string[] = []): Middleware {
  const probes = new Set(probePaths);
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const line = { method: ctx.method, path: ctx.path, status: ctx.status, duration_ms: Math.round(ms * 10) / 10 };
      // A 503 is the service asking for a retry (busy database, lease wait, no worker): not a fault.
      if (ctx.status >= 500 && ctx.status !== 503) ctx.state.log.error(line, 'request');
      else if (ctx.status === 503) ctx.state.log.warn(line, 'request');
      else if (probes.has(ctx.path) && ctx.status < 400) ctx.state.log.debug(line, 'request');
      else ctx.state.log.info(line, 'request');
    }
  };
}
