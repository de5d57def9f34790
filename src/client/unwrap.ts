/** The answer of a generated call (openapi-fetch) as its data, or as the client's errors. */
import { ApiError, ProtocolError } from './errors';

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a generated call, or its error as an ApiError (ProtocolError for an answer that is not JSON). */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call.catch((err: unknown) => {
    throw err instanceof SyntaxError
      ? new ProtocolError('the service', `an answer that is not JSON (${err.message.slice(0, 120)})`)
      : err;
  });
  if (!response.ok || error !== undefined) {
    throw new ApiError(response.status, 'HTTP', new URL(response.url || 'http://x/').pathname, error);
  }
  return data as T;
}
