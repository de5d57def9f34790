/**
 * App conversations: what a start made (SPEC 4.5), with the metadata lists and searches show (title,
 * repository, sandbox, where its agent server is) and the callback processors registered for it. Kept
 * apart from `conversations` (the event log's record, whose last_seq ingest rewrites): on FerretDB an
 * update rewrites the whole document, so the two writers must not share one.
 */
import type { Db, Filter } from 'mongodb';
import { isDuplicateKey } from './errors';
import { decodeKeys, encodeKeys } from './key-codec';
import type { CollectionIndexes } from './mongo';

export interface AppConversationRecord {
  id: string;
  created_by_user_id: string;
  sandbox_id: string | null;
  title: string | null;
  selected_repository: string | null;
  selected_branch: string | null;
  git_provider: string | null;
  trigger: string | null;
  agent_server_url: string | null;
  start_task_id: string | null;
  /** The callback processors registered at the start (SPEC 2.4), as sent. */
  processors: Record<string, unknown>[];
  created_at: Date;
  updated_at: Date;
}

type AppConversationDoc = Omit<AppConversationRecord, 'id'> & { _id: string };

export interface AppConversationFilters {
  titleContains?: string;
  sandboxId?: string;
  createdAtGte?: Date;
  createdAtLt?: Date;
  updatedAtGte?: Date;
  updatedAtLt?: Date;
}

export type AppConversationSort = { field: 'created_at' | 'updated_at'; order: 'asc' | 'desc' };

export const appConversationsIndexes: CollectionIndexes = {
  collection: 'app_conversations',
  indexes: [
    { key: { created_by_user_id: 1, created_at: -1, _id: -1 }, name: 'by_owner_created' },
    { key: { created_by_user_id: 1, updated_at: -1, _id: -1 }, name: 'by_owner_updated' },
  ],
};

/** Processors hold free-form objects: their keys are stored escaped (key-codec). */
const toRecord = ({ _id, processors, ...rest }: AppConversationDoc): AppConversationRecord => ({ id: _id, ...rest, processors: decodeKeys(processors) });
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class AppConversationsStore {
  constructor(private readonly db: Db) {}

  private get conversations() {
    return this.db.collection<AppConversationDoc>('app_conversations');
  }

  /** Creates the record; a second call with the same id (a retried start step) leaves the first as it is. */
  async create(record: AppConversationRecord): Promise<AppConversationRecord> {
    const { id, ...rest } = record;
    try {
      await this.conversations.insertOne({ _id: id, ...rest, processors: encodeKeys(rest.processors) });
      return record;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return (await this.get(id))!;
    }
  }

  async get(id: string): Promise<AppConversationRecord | null> {
    const d = await this.conversations.findOne({ _id: id });
    return d && toRecord(d);
  }

  async setTitle(id: string, title: string): Promise<void> {
    await this.conversations.updateOne({ _id: id }, { $set: { title, updated_at: new Date() } });
  }

  async getManyOwned(ids: readonly string[], userId: string): Promise<Map<string, AppConversationRecord>> {
    const docs = await this.conversations.find({ _id: { $in: [...ids] }, created_by_user_id: userId }).toArray();
    return new Map(docs.map((d) => [d._id, toRecord(d)]));
  }

  private filter(userId: string, f: AppConversationFilters): Filter<AppConversationDoc> {
    const filter: Filter<AppConversationDoc> = { created_by_user_id: userId };
    if (f.titleContains !== undefined) filter.title = { $regex: escapeRegExp(f.titleContains), $options: 'i' };
    if (f.sandboxId !== undefined) filter.sandbox_id = f.sandboxId;
    const range = (gte?: Date, lt?: Date) => (gte || lt ? { ...(gte ? { $gte: gte } : {}), ...(lt ? { $lt: lt } : {}) } : undefined);
    const created = range(f.createdAtGte, f.createdAtLt);
    const updated = range(f.updatedAtGte, f.updatedAtLt);
    if (created) filter.created_at = created;
    if (updated) filter.updated_at = updated;
    return filter;
  }

  /** The user's conversations in the given order (ties by id), `limit` at a time after the (sort value ms, id) of the last seen. */
  async search(
    userId: string,
    filters: AppConversationFilters,
    sort: AppConversationSort,
    limit: number,
    after?: readonly [atMs: number, id: string],
  ): Promise<{ items: AppConversationRecord[]; last: [number, string] | null }> {
    const filter = this.filter(userId, filters);
    const dir = sort.order === 'asc' ? 1 : -1;
    if (after) {
      const at = new Date(after[0]);
      const beyond = sort.order === 'asc' ? '$gt' : '$lt';
      filter.$and = [{ $or: [{ [sort.field]: { [beyond]: at } }, { [sort.field]: at, _id: { [beyond]: after[1] } }] }];
    }
    const docs = await this.conversations.find(filter).sort({ [sort.field]: dir, _id: dir }).limit(limit + 1).toArray();
    const items = docs.slice(0, limit).map(toRecord);
    const last = docs.length > limit ? items.at(-1)! : null;
    return { items, last: last ? [last[sort.field].getTime(), last.id] : null };
  }

  async count(userId: string, filters: AppConversationFilters): Promise<number> {
    return this.conversations.countDocuments(this.filter(userId, filters));
  }
}
