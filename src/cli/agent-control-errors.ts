/** The `agent-control` commands' own errors, and the exit code (exit-codes.ts) each error ends a command with. */
import { ApiError, ProtocolError, UnreachableError } from '../client';
import { EXIT } from './exit-codes';

export class UsageError extends Error {}
export class StartFailedError extends Error {}
/** The service answered, but holds no such thing (a lookup by id that found nothing). */
export class NotFoundError extends Error {}

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.USAGE;
  if (err instanceof StartFailedError) return EXIT.START_FAILED;
  if (err instanceof NotFoundError) return EXIT.NOT_FOUND;
  if (err instanceof UnreachableError || err instanceof ProtocolError) return EXIT.UNAVAILABLE;
  if (err instanceof ApiError) {
    if (err.status === 401 || err.status === 403) return EXIT.AUTH;
    if (err.status === 404) return EXIT.NOT_FOUND;
    if (err.status === 409) return EXIT.CONFLICT;
    if (err.status === 400 || err.status === 422) return EXIT.USAGE;
    if (err.status === 502 || err.status === 503 || err.status === 504) return EXIT.UNAVAILABLE;
  }
  return EXIT.UNEXPECTED;
}
