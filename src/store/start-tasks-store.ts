/**
 * Start tasks (SPEC 2.3): one document per start, written by the start-task workflow alone (through its
 * record activity) at every status, so a task can be read, searched and counted after its workflow's
 * retention, and read back by a client that lost its stream.
 */
import type { Db, Document, Filter, Sort } from 'mongodb';
import { keysetPage, type KeysetPage } from './keyset-page';
import {
  ENDED_START_STATUSES,
  startEnded,
  START_TASK_STATUSES,
  type StartTask,
  type StartTaskStatus,
} from '../schemas/app-conversations';
import { isDuplicateKey } from './errors';
import { decodeKeys, encodeKeys } from './key-codec';
import { countWithinBudget, type CollectionIndexes } from './mongo';

/**
 * A start task as stored: the api's view of it (StartTaskSchema) with its dates as Dates, its request as
 * the free-form object it is stored as, and the conversation it starts (the request's conversation_id,
 * or one the task chose).
 */
export type StartTaskRecord = Omit<StartTask, 'request' | 'created_at' | 'updated_at'> & {
  conversation_id: string;
  /** The request as echoed (secrets masked). */
  request: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
};

/** One status of the task as it was reached (the snapshots a stream sends). */
export type StartTaskStep = StartTaskChange & { at: Date };

/**
 * `secrets_sealed`: the request's secrets, sealed; read only by the start's activities, never shown.
 * `history`: every status so far, appended by the workflow's record step (its only writer).
 */
type StartTaskDoc = Omit<StartTaskRecord, 'id'> & {
  _id: string;
  secrets_sealed?: string | null;
  history?: (StartTaskStep | null)[];
};

/** What each status of a start changes. */
export type StartTaskChange = Pick<
  StartTaskRecord,
  'status' | 'detail' | 'app_conversation_id' | 'sandbox_id' | 'agent_server_url'
>;

export interface StartTaskFilters {
  conversationId?: string;
  createdAtGte?: Date;
  createdAtLt?: Date;
}

/** The order of a search (the published AppConversationStartTaskSortOrder: CREATED_AT, CREATED_AT_DESC, UPDATED_AT, UPDATED_AT_DESC). */
export type StartTaskSort = { field: 'created_at' | 'updated_at'; order: 'asc' | 'desc' };

export const startTasksIndexes: CollectionIndexes = {
  collection: 'start_tasks',
  indexes: [
    { key: { created_by_user_id: 1, created_at: -1, _id: -1 }, name: 'by_owner_newest_first' },
    // The search by last change (sort_order UPDATED_AT, UPDATED_AT_DESC).
    { key: { created_by_user_id: 1, updated_at: -1, _id: -1 }, name: 'by_owner_updated' },
    { key: { created_by_user_id: 1, conversation_id: 1 }, name: 'by_owner_conversation' },
    // The reconciler's sweep: unfinished tasks that have not moved for a while, oldest first.
    { key: { status: 1, updated_at: 1, _id: 1 }, name: 'by_status_updated' },
  ],
};

/** The statuses of a start that has not ended (neither READY nor ERROR): an `$in` the status index answers. */
const UNFINISHED: StartTaskStatus[] = START_TASK_STATUSES.filter((s) => !startEnded(s));

/** The request holds free-form objects (plugin parameters, observability metadata): its keys are stored escaped (key-codec). */
const toRecord = ({
  _id,
  secrets_sealed: _secrets,
  history: _history,
  request,
  ...rest
}: StartTaskDoc): StartTaskRecord => ({ id: _id, ...rest, request: decodeKeys(request) });

export class StartTasksStore {
  constructor(private readonly db: Db) {}

  private get tasks() {
    return this.db.collection<StartTaskDoc>('start_tasks');
  }

  /**
   * Creates the task as the api accepted it (WORKING), with its request's secrets sealed. False when a
   * task with this id exists already (the same conversation_id sent again: the caller joins that one).
   */
  async create(
    task: Omit<StartTaskRecord, 'created_at' | 'updated_at'>,
    secretsSealed: string | null,
    at = new Date(),
  ): Promise<boolean> {
    const { id, ...fields } = task;
    try {
      await this.tasks.insertOne({
        _id: id,
        ...fields,
        request: encodeKeys(fields.request),
        secrets_sealed: secretsSealed,
        history: [],
        created_at: at,
        updated_at: at,
      });
      return true;
    } catch (e) {
      if (isDuplicateKey(e)) return false;
      throw e;
    }
  }

  async sealedSecrets(id: string): Promise<string | null> {
    const d = await this.tasks.findOne({ _id: id }, { projection: { secrets_sealed: 1 } });
    return d?.secrets_sealed ?? null;
  }

  /**
   * Writes the task's `step`-th status (the start-task workflow's record step) into its history at that
   * position, so a retried write (its first attempt landed, its answer did not) leaves one entry, not two.
   * A step already written with the same status keeps the time it was first written: the record step
   * runs again when its worker died before the workflow took its answer, and a reader that saw the first
   * write must not take the second for a new run of the start. Returns the task as of that step: its
   * fields and time as the step recorded them (a later step may be written already: local steps run
   * in the same workflow task).
   */
  async record(id: string, step: number, change: StartTaskChange, at = new Date()): Promise<StartTaskRecord | null> {
    const doc = await this.tasks.findOneAndUpdate(
      { _id: id, [`history.${step}.status`]: { $ne: change.status } },
      { $set: { ...change, updated_at: at, [`history.${step}`]: { ...change, at } } },
      { returnDocument: 'after' },
    );
    if (doc) return toRecord(doc);
    const written = await this.tasks.findOne({ _id: id }, { projection: { secrets_sealed: 0 } });
    if (!written) return null;
    const first = written.history?.[step];
    if (!first || !(first.at instanceof Date)) return toRecord(written);
    const { at: firstAt, ...fields } = first;
    return { ...toRecord(written), ...fields, updated_at: firstAt };
  }

  /**
   * Empties the history of a task whose workflow was lost, before its workflow is started again, so the
   * new run leaves none of the lost run's statuses behind; only if the task is still as the caller read
   * it. True when done.
   */
  async clearHistoryIfUnchanged(id: string, seenUpdatedAt: Date): Promise<boolean> {
    const r = await this.tasks.updateOne(
      { _id: id, updated_at: seenUpdatedAt, status: { $in: UNFINISHED } },
      { $set: { history: [] } },
    );
    return r.matchedCount === 1;
  }

  /**
   * Writes a status after the last one, only if the task is still as the caller read it (its updated_at
   * unchanged): the reconciler's write, which must never overwrite a status the workflow wrote meanwhile.
   * True when written.
   */
  async recordIfUnchanged(
    id: string,
    seenUpdatedAt: Date,
    step: number,
    change: StartTaskChange,
    at = new Date(),
  ): Promise<boolean> {
    const r = await this.tasks.updateOne(
      { _id: id, updated_at: seenUpdatedAt, status: { $in: UNFINISHED } },
      { $set: { ...change, updated_at: at, [`history.${step}`]: { ...change, at } } },
    );
    return r.modifiedCount === 1;
  }

  /**
   * Up to `limit` unfinished tasks (neither READY nor ERROR) not updated since `before`, in (updated_at,
   * id) order after `after`, each with the number of statuses in its history: a page of the reconciler's
   * sweep (one query, on the status index).
   */
  async stalled(
    before: Date,
    limit: number,
    after?: readonly [updatedAt: Date, id: string],
  ): Promise<{ task: StartTaskRecord; steps: number }[]> {
    const filter: Filter<StartTaskDoc> = { status: { $in: UNFINISHED }, updated_at: { $lt: before } };
    if (after) filter.$or = [{ updated_at: { $gt: after[0] } }, { updated_at: after[0], _id: { $gt: after[1] } }];
    const docs = await this.tasks
      .find(filter, { projection: { secrets_sealed: 0 } })
      .sort({ updated_at: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => ({ task: toRecord(d), steps: d.history?.length ?? 0 }));
  }

  /** The task and every status it reached, in order (one `_id` lookup). */
  /** A status write that was lost leaves a hole (null) where a later one landed past it. */
  async withHistory(id: string): Promise<{ task: StartTaskRecord; history: (StartTaskStep | null)[] } | null> {
    const d = await this.tasks.findOne({ _id: id }, { projection: { secrets_sealed: 0 } });
    return d && { task: toRecord(d), history: d.history ?? [] };
  }

  /** How many of the user's starts have not ended (READY or ERROR): under way, or waiting in line. */
  async countUnfinished(userId: string): Promise<number> {
    return countWithinBudget(this.tasks, 'start tasks countUnfinished', {
      created_by_user_id: userId,
      status: { $nin: [...ENDED_START_STATUSES] },
    });
  }

  async startingIn(sandboxId: string, userId: string): Promise<string[]> {
    const docs = await this.tasks
      // Before it reports its sandbox, a start that was given one names it in its request.
      .find(
        {
          created_by_user_id: userId,
          status: { $nin: [...ENDED_START_STATUSES] },
          $or: [{ sandbox_id: sandboxId }, { 'request.sandbox_id': sandboxId }],
        },
        { projection: { _id: 1 } },
      )
      .limit(1000)
      .toArray();
    return docs.map((d) => d._id);
  }

  async delete(id: string): Promise<void> {
    await this.tasks.deleteOne({ _id: id });
  }

  async get(id: string): Promise<StartTaskRecord | null> {
    const d = await this.tasks.findOne({ _id: id });
    return d && toRecord(d);
  }

  async getManyOwned(ids: readonly string[], userId: string): Promise<Map<string, StartTaskRecord>> {
    return this.findMany({ _id: { $in: [...ids] }, created_by_user_id: userId });
  }

  /** Tasks by id, whoever started them (an organization's start line holds its members' starts). */
  async getMany(ids: readonly string[]): Promise<Map<string, StartTaskRecord>> {
    return this.findMany({ _id: { $in: [...ids] } });
  }

  private async findMany(filter: Filter<StartTaskDoc>): Promise<Map<string, StartTaskRecord>> {
    const docs = await this.tasks.find(filter).toArray();
    return new Map(docs.map((d) => [d._id, toRecord(d)]));
  }

  private filter(userId: string, f: StartTaskFilters): Filter<StartTaskDoc> {
    const filter: Filter<StartTaskDoc> = { created_by_user_id: userId };
    if (f.conversationId !== undefined) filter.conversation_id = f.conversationId;
    const created: { $gte?: Date; $lt?: Date } = {};
    if (f.createdAtGte) created.$gte = f.createdAtGte;
    if (f.createdAtLt) created.$lt = f.createdAtLt;
    if (created.$gte || created.$lt) filter.created_at = created;
    return filter;
  }

  /**
   * The user's tasks in the given order (ties by id), `limit` at a time after the (sort time ms, id) of the
   * last seen. The cursor's condition goes beside the filter's created_at range, in an `$and`, never over it.
   */
  async search(
    userId: string,
    filters: StartTaskFilters,
    sort: StartTaskSort,
    limit: number,
    after?: readonly [atMs: number, id: string],
  ): Promise<KeysetPage<StartTaskRecord>> {
    const filter = this.filter(userId, filters);
    const query = async (cursor: Document | null, order: Sort, n: number) => {
      const docs = await this.tasks
        .find(cursor ? { ...filter, $and: [cursor] } : filter, { projection: { secrets_sealed: 0, history: 0 } })
        .sort(order)
        .limit(n)
        .toArray();
      return docs.map(toRecord);
    };
    return keysetPage(query, sort, limit, after, (r) => r[sort.field]);
  }

  async count(userId: string, filters: StartTaskFilters): Promise<number> {
    return countWithinBudget(this.tasks, 'start tasks count', this.filter(userId, filters));
  }
}
