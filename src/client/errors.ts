/** What a call of the service can fail with, translated from HTTP statuses and socket errors at the boundary. */

/** The service answered with an error status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly body: unknown,
  ) {
    super(`${method} ${path} answered ${status}: ${ApiError.detail(body)}`);
  }

  static detail(body: unknown): string {
    if (body && typeof body === 'object') {
      const b = body as { detail?: unknown; message?: unknown };
      const d = b.detail ?? b.message;
      if (typeof d === 'string') return d;
      return JSON.stringify(d ?? body).slice(0, 300);
    }
    return String(body ?? '').slice(0, 300);
  }
}

/** The service could not be reached (refused, reset, timed out). */
export class UnreachableError extends Error {
  override readonly name = 'UnreachableError';
  constructor(
    readonly url: string,
    override readonly cause: unknown,
  ) {
    super(
      `cannot reach ${url}: ${cause instanceof Error ? ((cause.cause as Error | undefined)?.message ?? cause.message) : String(cause)}`,
    );
  }
}

/**
 * The service's answer is not one the API gives: not JSON where JSON is due, larger than the client
 * reads, or a redirect (never followed: the API key stays with the URL it was given for).
 */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly url: string,
    message: string,
  ) {
    super(`${url}: ${message}`);
  }
}
