/**
 * Reads a route's JSON request body, after its credential was checked (an unauthenticated caller never
 * makes the server hold a body). Over the size limit: 413. Not JSON, or nested deeper than
 * MAX_JSON_DEPTH: 422 with loc ["body"], as the spec's clients expect for any invalid body. The parsed
 * value goes to `ctx.state.body` (undefined when the request had none). How long a client may take to
 * send it is bounded by the server's `requestTimeout`, and does not count in the answer's deadline.
 */
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { HttpError, RequestValidationError } from './errors';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Deepest nesting of arrays and objects a body may have. Deeper input overflows the stack of every
 * recursive walk after it (the 422 echo, merges, the database's encoder), and no schema here needs it.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The nesting depth of JSON text, counted without parsing (strings and their escapes are skipped), and
 * stopping as soon as it passes `limit`: linear in the text, no recursion.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Whether a string of the JSON text holds the NUL character: in valid JSON only as the escape `\u0000`
 * (a raw control character is invalid in a string). Linear, like jsonDepthExceeds.
 */
export function jsonHasNul(text: string): boolean {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        if (text.charCodeAt(i + 1) === 0x75 && /^0000$/.test(text.slice(i + 2, i + 6))) return true;
        i++; // skip the escaped character
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
  }
  return false;
}

/** The 422 of a value holding U+0000, which FerretDB on PostgreSQL cannot store (jsonb has no NUL). */
export const nulDetail = (part: 'body' | 'query' | 'path') => ({
  loc: [part],
  msg: 'Strings may not contain the NUL character (U+0000)',
  type: 'string_nul',
  input: {},
});

/**
 * Reads a JSON body. With `rejectNul`, a body with U+0000 in any string is a 422: the api's store cannot
 * keep it, and finding out in the middle of a write would leave part of it stored.
 */
export function jsonBody(limitBytes: number, rejectNul = false): Middleware {
  return async (ctx, next) => {
    if (!BODY_METHODS.has(ctx.method)) return next();
    const length = ctx.request.length;
    const chunked = ctx.get('transfer-encoding') !== '';
    if (!chunked && !length) return next();
    const codings = ctx
      .get('transfer-encoding')
      .toLowerCase()
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean);
    if (codings.some((c) => c !== 'chunked'))
      throw new HttpError(
        501,
        `Transfer-Encoding ${codings.join(', ')} is not supported: send the body plain or chunked`,
      );
    if (!ctx.is('application/json', '+json') && ctx.get('content-type') !== '') {
      throw new HttpError(
        415,
        `Unsupported Media Type: send the body as application/json, not ${ctx.get('content-type')}`,
      );
    }
    if (length !== undefined && length > limitBytes)
      throw new HttpError(413, `Request body is larger than the limit of ${limitBytes} bytes`);
    let text: string;
    // The client's time, not the service's: the answer's deadline stands still meanwhile.
    ctx.state.answerClock?.pause();
    try {
      text = await getRawBody(ctx.req, { length, limit: limitBytes, encoding: 'utf8' });
      ctx.state.answerClock?.resume();
    } catch (e) {
      const err = e as { type?: string; status?: number };
      if (err.type === 'entity.too.large')
        throw new HttpError(413, `Request body is larger than the limit of ${limitBytes} bytes`);
      // The client's own doing: it went away (request.aborted), or its framing left nothing to read
      // (stream.not.readable: Content-Length beside chunked); never a server error.
      if ((err.status && err.status < 500) || err.type === 'stream.not.readable' || err.type === 'request.aborted') {
        throw new HttpError(400, 'The request body could not be read');
      }
      throw e;
    }
    if (text.trim() === '') return next();
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      throw new RequestValidationError([
        {
          loc: ['body'],
          msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
          type: 'json_invalid',
          input: {},
          ctx: { error: `nesting deeper than ${MAX_JSON_DEPTH} levels`, max_depth: MAX_JSON_DEPTH },
        },
      ]);
    }
    if (rejectNul && jsonHasNul(text)) throw new RequestValidationError([nulDetail('body')]);
    try {
      ctx.state.body = JSON.parse(text);
    } catch (e) {
      throw new RequestValidationError([
        {
          loc: ['body'],
          msg: 'JSON decode error',
          type: 'json_invalid',
          input: {},
          ctx: { error: (e as Error).message },
        },
      ]);
    }
    return next();
  };
}
