/**
 * One GET of a code host's REST API with a user's token, bounded: within the request's deadline, at most
 * MAX_ANSWER_BYTES read, redirects followed only on the same origin (the token goes nowhere else). What
 * goes wrong becomes a domain error naming the host and what to do; no message carries the token.
 */
import { BadRequest, NotFound, Unavailable, UpstreamFailed } from '../errors';
import { readBodyAtMost } from '../read-body';
import { nextLinkOf } from './link-header';

/** The largest answer read from a host (a page of 100 repositories is about 600 KB). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** Of an error answer, only this much is read (for its message). */
const MAX_ERROR_BYTES = 64 * 1024;
const MAX_REDIRECTS = 3;
/** Where a user stores a provider token (named in the errors that ask for one). */
export const STORE_TOKEN_ROUTE = 'POST /api/v1/secrets/git-providers';

export interface HostCall {
  /** The provider's name in answers (git_host_a). */
  provider: string;
  token: string;
  headers: Record<string, string>;
  /** The request's deadline, and its length for the message when it runs out. */
  signal: AbortSignal;
  timeoutMs: number;
  /** What a 404 means here (a repository the token cannot see); without it a 404 is the host's failure. */
  notFound?: string;
}

export interface HostAnswer {
  body: unknown;
  /** The Link header (rel="next" when the host has another page). */
  link: string | null;
}

/** Whether a Link header names a next page. */
export const hasNextLink = (link: string | null): boolean => nextLinkOf(link) !== null;

export async function getHostJson(url: URL, call: HostCall): Promise<HostAnswer> {
  let res: Response;
  let at = url;
  for (let hops = 0; ; hops++) {
    res = await send(at, call);
    if (res.status < 300 || res.status >= 400 || res.status === 304) break;
    await res.body?.cancel();
    const to = res.headers.get('location');
    const next = to ? safeUrl(to, at) : null;
    if (!next || next.origin !== url.origin || hops === MAX_REDIRECTS) {
      throw new UpstreamFailed(
        `${call.provider} answered ${res.status}, a redirect ${next ? `to another origin (${next.origin})` : 'without a usable Location'}; not followed with the token`,
      );
    }
    at = next;
  }
  if (!res.ok) throw await refusal(res, call);
  const text = await readAtMost(res, MAX_ANSWER_BYTES, call);
  if (text === null)
    throw new UpstreamFailed(`${call.provider} answered more than ${MAX_ANSWER_BYTES} bytes; not read`);
  try {
    return { body: JSON.parse(text) as unknown, link: res.headers.get('link') };
  } catch {
    throw new UpstreamFailed(`${call.provider} answered ${res.status} with a body that is not JSON`);
  }
}

async function send(url: URL, call: HostCall): Promise<Response> {
  try {
    return await fetch(url, {
      headers: { ...call.headers, Authorization: `Bearer ${call.token}` },
      redirect: 'manual',
      signal: call.signal,
    });
  } catch (e) {
    throw lost(e, call);
  }
}

/** A call that got no answer: transient, so a 503 with Retry-After. */
function lost(e: unknown, call: HostCall): Unavailable {
  if (call.signal.aborted) return new Unavailable(`${call.provider} did not answer within ${call.timeoutMs} ms`, 5);
  const code = (e as { cause?: { code?: unknown } }).cause?.code;
  return new Unavailable(`${call.provider} could not be reached${typeof code === 'string' ? ` (${code})` : ''}`, 5);
}

const safeUrl = (to: string, base: URL): URL | null => {
  try {
    return new URL(to, base);
  } catch {
    return null;
  }
};

/** The body as text, or null past `max` bytes; a host that stops sending it is lost. */
async function readAtMost(res: Response, max: number, call: HostCall): Promise<string | null> {
  try {
    return await readBodyAtMost(res, max);
  } catch (e) {
    throw lost(e, call);
  }
}

/** The host's own words about a refusal: its `message`, short, on one line, without the token. */
async function hostMessage(res: Response, call: HostCall): Promise<string> {
  const text = await readAtMost(res, MAX_ERROR_BYTES, call).catch(() => null);
  let message: unknown;
  try {
    message = text ? (JSON.parse(text) as { message?: unknown }).message : undefined;
  } catch {
    message = undefined;
  }
  if (typeof message !== 'string' || message.trim() === '') return '';
  const clean = (call.token ? message.split(call.token).join('[token]') : message)
    .replace(/\p{Cc}+/gu, ' ')
    .trim()
    .slice(0, 200);
  return `: ${clean}`;
}

/** Seconds until a rate-limited host takes calls again (1 s to 1 h). */
function retryAfter(res: Response): number {
  const after = Number(res.headers.get('retry-after'));
  const reset = Number(res.headers.get('x-ratelimit-reset'));
  const seconds =
    Number.isFinite(after) && after > 0 ? after : Number.isFinite(reset) && reset > 0 ? reset - Date.now() / 1000 : 60;
  return Math.min(3600, Math.max(1, Math.ceil(seconds)));
}

async function refusal(res: Response, call: HostCall): Promise<Error> {
  const { provider } = call;
  const limited =
    res.status === 429 ||
    (res.status === 403 && (res.headers.get('x-ratelimit-remaining') === '0' || res.headers.has('retry-after')));
  const said = await hostMessage(res, call);
  if (limited) return new Unavailable(`${provider} rate limit reached${said}`, retryAfter(res));
  if (res.status === 401)
    return new UpstreamFailed(
      `${provider} refused the stored token (401${said}): store a valid ${provider} token with ${STORE_TOKEN_ROUTE}`,
    );
  if (res.status === 403)
    return new UpstreamFailed(
      `${provider} refused the request with the stored token (403${said}): it may lack a scope or an installation`,
    );
  if (res.status === 404 && call.notFound) return new NotFound(`${call.notFound} (${provider} answered 404)`);
  if (res.status === 422) return new BadRequest(`${provider} refused the search (422${said})`);
  return new UpstreamFailed(`${provider} failed to answer (${res.status}${said})`);
}
