/**
 * Reads a JSON request body with a size limit. Over the limit: 413. Not JSON: 422 with loc ["body"],
 * as the spec's clients expect for any invalid body. The parsed value goes to `ctx.state.body`
 * (undefined when the request had no body). Types listed in `passThroughTypes` are left unread.
 */
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { HttpError, RequestValidationError } from './errors';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function jsonBody(limitBytes: number, opts: { passThroughTypes?: string[] } = {}): Middleware {
  const passThrough = opts.passThroughTypes ?? [];
  return async (ctx, next) => {
    if (!BODY_METHODS.has(ctx.method)) return next();
    // Bodies of these types are the handler's to read (file uploads), as a stream.
    if (passThrough.length > 0 && ctx.is(passThrough)) return next();
    const length = ctx.request.length;
    const chunked = ctx.get('transfer-encoding') !== '';
    if (!chunked && !length) return next();
    if (!ctx.is('application/json', '+json') && ctx.get('content-type') !== '') {
      throw new HttpError(415, `Unsupported Media Type: send the body as application/json, not ${ctx.get('content-type')}`);
    }
    let text: string;
    try {
      text = await getRawBody(ctx.req, { length, limit: limitBytes, encoding: 'utf8' });
    } catch (e) {
      const err = e as { type?: string; status?: number };
      if (err.type === 'entity.too.large') throw new HttpError(413, `Request body is larger than the limit of ${limitBytes} bytes`);
      if (err.status && err.status < 500) throw new HttpError(400, 'The request body could not be read');
      throw e;
    }
    if (text.trim() === '') return next();
    try {
      ctx.state.body = JSON.parse(text);
    } catch (e) {
      throw new RequestValidationError([
        { loc: ['body'], msg: 'JSON decode error', type: 'json_invalid', input: {}, ctx: { error: (e as Error).message } },
      ]);
    }
    return next();
  };
}
