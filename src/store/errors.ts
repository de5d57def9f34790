/**
 * Errors of the store layer that callers answer differently from a crash, translated from the driver's
 * raw errors here, at the boundary, as domain errors (src/errors.ts); nothing in this layer knows HTTP.
 */
import {
  MongoBulkWriteError,
  MongoNetworkError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
} from 'mongodb';
import { Unavailable } from '../errors';

/** Seconds a client is asked to wait after a read of a busy database. */
const BUSY_RETRY_AFTER_SECONDS = 5;

/** MongoDB's MaxTimeMSExpired: the server stopped a command when its `maxTimeMS` ran out. */
export const MAX_TIME_MS_EXPIRED = 50;

/**
 * MongoDB's CursorNotFound. FerretDB 1.24 ends a find's cursor with the command's `maxTimeMS`: a read whose
 * budget runs out between its first batch and a getMore is told its cursor is gone, not MaxTimeMSExpired
 * (seen in CI: "cursor id ... not found" from an event range read with a 1 ms budget).
 */
export const CURSOR_NOT_FOUND = 43;

/**
 * A read ran out of its time budget: the database is too busy to answer now; retrying later may work.
 * Callers see it as any Unavailable (a 503 with Retry-After at the api).
 */
export class DatabaseBusyError extends Unavailable {
  constructor(
    readonly operation: string,
    readonly budgetMs: number,
    options?: { cause?: unknown },
  ) {
    // The message is what a client reads: no operation names or budgets (they are fields, for the log).
    super(
      'The database is busy and the request ran out of its time budget; retry shortly',
      BUSY_RETRY_AFTER_SECONDS,
      options,
    );
    this.name = 'DatabaseBusyError';
  }
}

/** MongoDB's DuplicateKey (E11000): an insert or upsert met a unique index that already holds its key. */
export const DUPLICATE_KEY = 11000;

/**
 * FerretDB 1.24 answers an update that would break a unique index with an InternalError (code 1)
 * carrying its backend's message, not E11000 (test/ferretdb-behaviour.test.ts): PostgreSQL's
 * unique_violation, or SQLite's constraint error.
 */
const BACKEND_UNIQUE_VIOLATION =
  /duplicate key value violates unique constraint .*\(SQLSTATE 23505\)|UNIQUE constraint failed/;

/**
 * The write failed on a unique key. A bulk write's error carries the code of its first failed write
 * (`writeErrors`); any other error carries its own.
 */
export function isDuplicateKey(e: unknown): boolean {
  const err = e as
    { code?: unknown; message?: unknown; writeErrors?: { code?: unknown }[] | { code?: unknown } } | null | undefined;
  const first = Array.isArray(err?.writeErrors) ? err.writeErrors[0] : err?.writeErrors;
  if ((first?.code ?? err?.code) === DUPLICATE_KEY) return true;
  return e instanceof MongoServerError && e.code === 1 && BACKEND_UNIQUE_VIOLATION.test(e.message);
}

export const isMaxTimeExpired = (e: unknown): boolean =>
  e instanceof MongoServerError && (e.code === MAX_TIME_MS_EXPIRED || e.codeName === 'MaxTimeMSExpired');

/**
 * Runs a read that was given `maxTimeMS: budgetMs`, turning the server's MaxTimeMSExpired (and a cursor
 * the budget ended, CursorNotFound) into a DatabaseBusyError; every other error passes through unchanged.
 */
export async function withinBudget<T>(operation: string, budgetMs: number, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    // A cursor lost mid-read (its budget ended it, or the server did) is as busy: the same read may work shortly.
    const cursorLost =
      e instanceof MongoServerError && (e.code === CURSOR_NOT_FOUND || e.codeName === 'CursorNotFound');
    if (isMaxTimeExpired(e) || cursorLost) throw new DatabaseBusyError(operation, budgetMs, { cause: e });
    throw e;
  }
}

/** Seconds a client is asked to wait after the database did not answer. */
const UNREACHABLE_RETRY_AFTER_SECONDS = 5;

/**
 * The database did not answer: no server could be selected, a connection broke or timed out (the pool
 * is then cleared: PoolClearedOnNetworkError), no pooled connection came free in time, or an operation
 * ran out of its time. Nothing about the request is wrong, and the same request may work shortly.
 */
export function isDatabaseUnreachable(e: unknown): boolean {
  for (let c = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    if (
      c instanceof MongoNetworkError ||
      c instanceof MongoServerSelectionError ||
      c instanceof MongoOperationTimeoutError
    )
      return true;
    if ((c as Error).name === 'MongoWaitQueueTimeoutError') return true;
    if (isBackendUnreachable(c) || isBulkWriteCutShort(c) || isSocketCutShort(c)) return true;
  }
  return false;
}

/** A socket's own errors for a peer that closed or reset the connection. */
const SOCKET_CUT_SHORT = new Set(['EPIPE', 'ECONNRESET']);

/**
 * The driver lets the socket's own error escape unwrapped when it writes a command to a connection the
 * server has just closed (the write is refused after the server's FIN, and its wait for 'drain' rejects
 * with the bare EPIPE): seen when FerretDB was killed mid-request. Inside a request only a dependency's
 * socket throws these (the client's own socket errors never reach a handler), so it is the same as a
 * connection that closed.
 */
function isSocketCutShort(e: unknown): boolean {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return typeof code === 'string' && SOCKET_CUT_SHORT.has(code);
}

/** The driver's own messages for a connection that broke, timed out or was cleared, or no server to select. */
const DRIVER_NETWORK_MESSAGE =
  /^connection \d+ to \S+ (timed out|closed)|^Connection pool for \S+ was cleared|^Server selection timed out/;

/**
 * insertMany and bulkWrite rethrow a network error as a MongoBulkWriteError carrying its message (no
 * cause, no write errors): the batch may or may not have been stored, which a resend sorts out.
 */
function isBulkWriteCutShort(e: unknown): boolean {
  return (
    e instanceof MongoBulkWriteError &&
    [e.writeErrors].flat().length === 0 &&
    !e.writeConcernError &&
    DRIVER_NETWORK_MESSAGE.test(e.message)
  );
}

/** FerretDB's InternalError (code 1) says why in its message: these are its PostgreSQL not answering. */
const FERRETDB_INTERNAL_ERROR = 1;
const BACKEND_UNREACHABLE =
  /failed to connect to|server error: FATAL|conn closed|conn busy|closed pool|connection reset|broken pipe|unexpected EOF|i\/o timeout|context deadline exceeded|context canceled|57P0[1-3]|the database system is (starting up|shutting down|in recovery)/i;

/**
 * A MongoDB-wire server in front of another database (FerretDB on PostgreSQL) answers with an internal
 * error when that database cannot be reached: the same as not answering, for a client.
 */
function isBackendUnreachable(e: unknown): boolean {
  return e instanceof MongoServerError && e.code === FERRETDB_INTERNAL_ERROR && BACKEND_UNREACHABLE.test(e.message);
}

/** The api's view of a store failure: an unreachable database is Unavailable (503, Retry-After); anything else as it came. */
export function translateStoreError(e: unknown): unknown {
  if (isDatabaseUnreachable(e) && !(e instanceof Unavailable)) {
    return new Unavailable('The database did not answer; retry shortly', UNREACHABLE_RETRY_AFTER_SECONDS, { cause: e });
  }
  return e;
}
