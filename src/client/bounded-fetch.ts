/**
 * The client's fetch: no redirect followed (the API key stays with the URL it was given for), and, when
 * bounded, a whole answer within a deadline and a size. Errors leave as the client's own: a refused or
 * timed-out call is UnreachableError, an answer the API does not give is ProtocolError; an abort by the
 * caller stays an AbortError.
 */
import { ProtocolError, UnreachableError } from './errors';

export interface FetchBounds {
  /** The whole answer, body included, within this many ms. */
  timeoutMs: number;
  /** A body longer than this is refused, not buffered. */
  maxBytes: number;
}

/** The largest error answer of an unbounded call that is read. */
const ERROR_BODY_MAX = 1 << 20;

/** Statuses whose Response has no body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

export function boundedFetch(baseUrl: string, bounds?: FetchBounds): (req: Request) => Promise<Response> {
  return async (req) => {
    const deadline = bounds ? AbortSignal.timeout(bounds.timeoutMs) : undefined;
    try {
      const res = await fetch(req, {
        redirect: 'manual',
        signal: deadline ? AbortSignal.any([req.signal, deadline]) : req.signal,
      });
      if (res.status >= 300 && res.status < 400 && res.status !== 304) {
        await res.body?.cancel();
        const to = res.headers.get('location');
        throw new ProtocolError(
          baseUrl,
          `answered ${res.status}, a redirect${to ? ` to ${to.slice(0, 200)}` : ''}; not followed (if that is the service, use its URL)`,
        );
      }
      // Unbounded (a stream, with its own idle bound) but for an error answer, which is read whole.
      if (bounds) return await readWithin(baseUrl, res, bounds.maxBytes);
      return res.ok ? res : await readWithin(baseUrl, res, ERROR_BODY_MAX);
    } catch (err) {
      if (err instanceof ProtocolError || req.signal.aborted) throw err;
      if (deadline?.aborted)
        throw new UnreachableError(baseUrl, new Error(`no whole answer within ${bounds!.timeoutMs} ms`));
      throw new UnreachableError(baseUrl, err);
    }
  };
}

/** The answer with its body read, refused past `maxBytes` (declared or as it comes). */
async function readWithin(baseUrl: string, res: Response, maxBytes: number): Promise<Response> {
  if (!res.body) return res;
  const tooLarge = () => new ProtocolError(baseUrl, `an answer larger than ${maxBytes} bytes; not read`);
  if (Number(res.headers.get('content-length')) > maxBytes) {
    await res.body.cancel();
    throw tooLarge();
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(); // leaving the loop cancels the body
    parts.push(chunk);
  }
  let copy: Response;
  try {
    copy = new Response(NULL_BODY.has(res.status) ? null : Buffer.concat(parts), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  } catch {
    throw new ProtocolError(baseUrl, `an answer with status ${res.status}, which HTTP does not have`);
  }
  Object.defineProperty(copy, 'url', { value: res.url });
  return copy;
}
