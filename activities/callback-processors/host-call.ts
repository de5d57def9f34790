/**
 * One call of a processor to the host it posts to: no redirect followed (the credential stays with the
 * URL it was given for), the whole answer within a deadline and a size. What the host says is hostile
 * input: it is read as text up to the bound and parsed by the caller, never trusted for its shape.
 */
import { deadline, type Deadline } from '../../src/deadline';
import { readBodyAtMost } from '../../src/read-body';

export interface HostAnswer {
  status: number;
  /** The Link header (the next page of a listing), null when none. */
  link: string | null;
  /** The body as text, at most HOST_ANSWER_MAX_BYTES of it. */
  text: string;
  /** The body as JSON, or null when it is not JSON. */
  json(): unknown;
}

export const HOST_CALL_TIMEOUT_MS = 30_000;
export const HOST_ANSWER_MAX_BYTES = 2 << 20;

export async function callHost(
  host: string,
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown; signal?: AbortSignal },
): Promise<HostAnswer> {
  const bound = deadline(HOST_CALL_TIMEOUT_MS, init.signal);
  try {
    return await callWithin(host, url, init, bound);
  } finally {
    bound.clear();
  }
}

async function callWithin(
  host: string,
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown },
  bound: Deadline,
): Promise<HostAnswer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method,
      headers: {
        Accept: 'application/json',
        ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...init.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      redirect: 'manual',
      signal: bound.signal,
    });
  } catch (e) {
    throw new Error(
      bound.expired()
        ? `${host} did not answer within ${HOST_CALL_TIMEOUT_MS} ms`
        : `${host} could not be reached: ${(e as Error).message}`,
      { cause: e },
    );
  }
  let text = '';
  try {
    text = await readBounded(res);
  } catch (e) {
    throw new Error(
      bound.expired()
        ? `${host} did not send its whole answer within ${HOST_CALL_TIMEOUT_MS} ms`
        : `${host}: ${(e as Error).message}`,
      { cause: e },
    );
  }
  return {
    status: res.status,
    link: res.headers.get('link'),
    text,
    json: () => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return null;
      }
    },
  };
}

async function readBounded(res: Response): Promise<string> {
  const text = await readBodyAtMost(res, HOST_ANSWER_MAX_BYTES);
  if (text === null) throw new Error(`an answer larger than ${HOST_ANSWER_MAX_BYTES} bytes; not read`);
  return text;
}
