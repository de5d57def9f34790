/**
 * Typed HTTP errors and the one error middleware that sits first in the chain, shared by the api and the
 * in-sandbox runtime. Every error becomes a small JSON body: 422 HTTPValidationError, `{detail}` for the
 * rest; a 500 never shows its stack. Domain errors (src/errors.ts) get their status here, and only here.
 */
import type { Middleware } from 'koa';
import { DomainError, InvalidInput, Unavailable, type DomainErrorKind } from '../errors';
import type { ValidationDetail } from '../schemas/validation-detail';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpError';
  }
}

export class RequestValidationError extends Error {
  readonly status = 422;
  constructor(readonly detail: ValidationDetail[]) {
    super(`request validation failed: ${detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}`);
    this.name = 'RequestValidationError';
  }
}

export const notFound = (what = 'Not Found') => new HttpError(404, what);
export const unauthorized = (detail: string) => new HttpError(401, detail);
export const forbidden = (detail: string) => new HttpError(403, detail);

/** The HTTP status of each kind of domain error. */
const DOMAIN_STATUS: Record<DomainErrorKind, number> = {
  bad_request: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  invalid_input: 422,
  too_many: 429,
  upstream_failed: 502,
  unavailable: 503,
};

/** Errors thrown by Koa itself or its helpers (http-errors) carry `status` and `expose`. */
interface KoaLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

/**
 * `translate` turns a lower layer's raw errors into domain errors first (the api's: an unreachable
 * database is Unavailable), so that this file knows no driver.
 */
export function errorMiddleware(translate: (err: unknown) => unknown = (err) => err): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      // A status set without a body (404 of no route, 405 or 501 of the router, with its Allow header).
      if (ctx.status >= 400 && ctx.body == null) {
        const status = ctx.status;
        ctx.body = { detail: httpStatusText(status, ctx.method) };
        ctx.status = status; // Koa turns an unset status into 200 when a body is assigned
      }
    } catch (err) {
      answerError(ctx, translate(err));
    } finally {
      // A body the request declared but nobody read (a 401, a 404, a route without a body): close the
      // connection after the answer instead of reading, or waiting for, the rest of it.
      if (!ctx.req.complete) ctx.set('Connection', 'close');
    }
  };
}

function answerError(ctx: Parameters<Middleware>[0], err: unknown): void {
  if (err instanceof RequestValidationError) {
    ctx.status = 422;
    ctx.body = { detail: err.detail };
    return;
  }
  if (err instanceof HttpError) {
    ctx.status = err.status;
    ctx.set(err.headers);
    ctx.body = { detail: err.detail };
    return;
  }
  if (err instanceof InvalidInput) {
    ctx.status = 422;
    ctx.body = { detail: err.details };
    return;
  }
  if (err instanceof Unavailable) {
    // A dependency is overloaded or slow, not broken: the client may retry.
    ctx.state.log?.warn({ err }, 'unavailable');
    ctx.status = 503;
    if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(err.retryAfterSeconds));
    ctx.body = { detail: err.message };
    return;
  }
  if (err instanceof DomainError) {
    ctx.status = DOMAIN_STATUS[err.kind];
    ctx.body = { detail: err.message };
    return;
  }
  const e = err as KoaLikeError;
  const status = e.status ?? e.statusCode;
  if (status && ((status >= 400 && status < 500) || status === 501)) {
    ctx.status = status;
    ctx.body = { detail: e.expose && e.message ? e.message : httpStatusText(status, ctx.method) };
    return;
  }
  ctx.state.log?.error({ err }, 'unhandled error');
  ctx.status = 500;
  ctx.body = { detail: 'Internal Server Error' };
}

export function httpStatusText(status: number, method?: string): string {
  const texts: Record<number, string> = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    408: 'Request Timeout: the request was not received in time',
    409: 'Conflict',
    413: 'Request Entity Too Large',
    415: 'Unsupported Media Type',
    431: 'Request Header Fields Too Large',
    501: method ? `Method ${method} is not implemented by this server` : 'Not Implemented',
  };
  return texts[status] ?? (status >= 500 ? 'Internal Server Error' : 'Request Error');
}
