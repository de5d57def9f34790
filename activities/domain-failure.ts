/**
 * Domain errors leaving an activity: Temporal retries an activity on any failure unless told otherwise,
 * and a sandbox spec that does not exist or a conflict with the stored state is no better on the fifth
 * try. Each becomes an ApplicationFailure typed by its class name (NotFound, Conflict, InvalidInput, ...),
 * non-retryable unless the error says it is transient (Unavailable with a retry time). Other errors pass
 * through unchanged: a lost connection is what retries are for.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { DomainError } from '../src/errors';

export function asActivityFailure(e: unknown): unknown {
  if (!(e instanceof DomainError)) return e;
  return ApplicationFailure.create({ type: e.name, message: e.message, nonRetryable: !e.transient, cause: e });
}

type AsyncFunctions = Record<string, (...args: never[]) => Promise<unknown>>;

/** The same activities, each answering domain errors as ApplicationFailures. */
export function withDomainFailures<T extends AsyncFunctions>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      try {
        return await f(...args);
      } catch (e) {
        throw asActivityFailure(e);
      }
    };
  }
  return wrapped as T;
}
