/**
 * Errors of the store layer that callers answer differently from a crash, translated from the driver's
 * raw errors here, at the boundary. The http error middleware maps them to statuses; nothing in this
 * layer knows HTTP.
 */
import { MongoServerError } from 'mongodb';

/** MongoDB's MaxTimeMSExpired: the server stopped a command when its `maxTimeMS` ran out. */
export const MAX_TIME_MS_EXPIRED = 50;

/** A read ran out of its time budget: the database is too busy to answer now; retrying later may work. */
export class DatabaseBusyError extends Error {
  constructor(
    readonly operation: string,
    readonly budgetMs: number,
    options?: { cause?: unknown },
  ) {
    super(`${operation} did not finish within its budget of ${budgetMs} ms: the database is busy`, options);
    this.name = 'DatabaseBusyError';
  }
}

export const isMaxTimeExpired = (e: unknown): boolean =>
  e instanceof MongoServerError && (e.code === MAX_TIME_MS_EXPIRED || e.codeName === 'MaxTimeMSExpired');

/**
 * Runs a read that was given `maxTimeMS: budgetMs`, turning the server's MaxTimeMSExpired into a
 * DatabaseBusyError; every other error passes through unchanged.
 */
export async function withinBudget<T>(operation: string, budgetMs: number, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (isMaxTimeExpired(e)) throw new DatabaseBusyError(operation, budgetMs, { cause: e });
    throw e;
  }
}
