/**
 * The `events` collection with the time budget of its reads: what the log's read paths share, so that a
 * read that runs out of its budget or of its deadline throws DatabaseBusyError wherever it is made.
 */
import type { Db } from 'mongodb';
import { DatabaseBusyError, withinBudget } from './errors';
import type { StoredEvent } from './events-collection';

export class EventsReader {
  constructor(
    private readonly db: Db,
    /** Time budget of each read, sent as the server's `maxTimeMS` (EventsStoreOptions.queryTimeoutMs). */
    readonly maxTimeMS: number,
  ) {}

  get events() {
    return this.db.collection<StoredEvent>('events');
  }

  /** Runs one read with the whole budget; past it, DatabaseBusyError for `events <operation>`. */
  read<T>(operation: string, run: (maxTimeMS: number) => Promise<T>): Promise<T> {
    return withinBudget(`events ${operation}`, this.maxTimeMS, () => run(this.maxTimeMS));
  }

  /**
   * Runs one of several reads that share `deadline`, with what is left of it when that is less than the
   * budget; DatabaseBusyError without reading when nothing is left.
   */
  async readBy<T>(operation: string, deadline: number, run: (maxTimeMS: number) => Promise<T>): Promise<T> {
    const left = deadline - Date.now();
    if (left <= 0) throw new DatabaseBusyError(`events ${operation}`, this.maxTimeMS);
    return this.read(operation, (maxTimeMS) => run(Math.min(maxTimeMS, left)));
  }
}
