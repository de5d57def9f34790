/**
 * Typed HTTP errors and the one error middleware that sits first in the chain. Every error becomes a
 * small JSON body: 422 HTTPValidationError, `{detail}` for the rest; a 500 never shows its stack.
 */
import type { Middleware } from 'koa';
import type { ValidationDetail } from './validation-detail';

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

/** Errors thrown by Koa itself or its helpers (http-errors) carry `status` and `expose`. */
interface KoaLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

export function errorMiddleware(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new HttpError(404, 'Not Found');
    } catch (err) {
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
      const e = err as KoaLikeError;
      const status = e.status ?? e.statusCode;
      if (status && status >= 400 && status < 500) {
        ctx.status = status;
        ctx.body = { detail: e.expose && e.message ? e.message : httpStatusText(status) };
        return;
      }
      ctx.state.log?.error({ err }, 'unhandled error');
      ctx.status = 500;
      ctx.body = { detail: 'Internal Server Error' };
    }
  };
}

function httpStatusText(status: number): string {
  const texts: Record<number, string> = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    409: 'Conflict',
    413: 'Request Entity Too Large',
    415: 'Unsupported Media Type',
  };
  return texts[status] ?? 'Request Error';
}
