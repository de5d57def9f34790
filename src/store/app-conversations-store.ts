/**
 * App conversations: what a start made (SPEC 4.5), with the metadata lists and searches show (title,
 * repository, sandbox, where its agent server is) and the callback processors registered for it. Kept
 * apart from `conversations` (the event log's record, whose last_seq ingest rewrites): on FerretDB an
 * update rewrites the whole document, so the two writers must not share one.
 */
import type { Db, Document, Filter, Sort } from 'mongodb';
import { keysetPage, type KeysetPage } from './keyset-page';
import { isDuplicateKey } from './errors';
import { decodeKeys, encodeKeys } from './key-codec';
import { countWithinBudget, type CollectionIndexes } from './mongo';

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
  llm_model: string | null;
  /** The saved LLM profile the start named (agent_profile_id), at the revision it used; null: none. */
  launched_agent_profile: { agent_profile_id: string; revision: number } | null;
  public: boolean | null;
  pr_number: number[];
  tags: Record<string, string>;
  parent_conversation_id: string | null;
  /** The skills the agent was started with (GET .../skills). */
  skills: StartedSkill[];
  /** The agent's working directory in the sandbox (the repository), relative to the runtime's. */
  working_dir: string | null;
  /** The agent hooks it was started with, by hook type (GET .../hooks). */
  hooks: Record<string, { matcher: string; command: string; timeout: number }[]>;
  created_at: Date;
  updated_at: Date;
}

export interface StartedSkill {
  name: string;
  content: string;
  triggers: string[];
}

/** What PATCH may change (SPEC: AppConversationUpdateRequest); absent fields stay as they are. */
export type AppConversationChange = Partial<
  Pick<AppConversationRecord, 'title' | 'public' | 'selected_repository' | 'selected_branch' | 'git_provider'>
>;

/** Fields added after the first records were written: absent from those. */
type LaterFields =
  | 'llm_model'
  | 'launched_agent_profile'
  | 'public'
  | 'pr_number'
  | 'tags'
  | 'parent_conversation_id'
  | 'skills'
  | 'hooks'
  | 'working_dir';
/** A new record: the later fields may be left out (their empty values). */
export type NewAppConversation = Omit<AppConversationRecord, LaterFields> &
  Partial<Pick<AppConversationRecord, LaterFields>>;
type AppConversationDoc = Omit<AppConversationRecord, 'id' | LaterFields> &
  Partial<Pick<AppConversationRecord, LaterFields>> & { _id: string };

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
    // Delete asks whether another conversation still uses the sandbox; a view lists a page's children.
    { key: { sandbox_id: 1 }, name: 'by_sandbox' },
    { key: { parent_conversation_id: 1 }, name: 'by_parent' },
  ],
};

/** Processors hold free-form objects: their keys are stored escaped (key-codec). Records older than a field get its empty value. */
const toRecord = ({ _id, processors, ...rest }: AppConversationDoc): AppConversationRecord => ({
  id: _id,
  ...rest,
  processors: decodeKeys(processors),
  llm_model: rest.llm_model ?? null,
  launched_agent_profile: rest.launched_agent_profile ?? null,
  public: rest.public ?? null,
  pr_number: rest.pr_number ?? [],
  tags: rest.tags ? decodeKeys(rest.tags) : {},
  parent_conversation_id: rest.parent_conversation_id ?? null,
  skills: rest.skills ?? [],
  hooks: rest.hooks ? decodeKeys(rest.hooks) : {},
  working_dir: rest.working_dir ?? null,
});
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class AppConversationsStore {
  constructor(private readonly db: Db) {}

  private get conversations() {
    return this.db.collection<AppConversationDoc>('app_conversations');
  }

  /** Creates the record; a second call with the same id (a retried start step) leaves the first as it is. */
  async create(input: NewAppConversation): Promise<AppConversationRecord> {
    const record = toRecord({ _id: input.id, ...input } as AppConversationDoc);
    const { id, ...rest } = record;
    try {
      await this.conversations.insertOne({
        _id: id,
        ...rest,
        processors: encodeKeys(rest.processors),
        tags: encodeKeys(rest.tags),
        hooks: encodeKeys(rest.hooks),
      });
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

  /** The model its agent uses now (after a switch of profile). */
  async setModel(id: string, llmModel: string): Promise<void> {
    await this.conversations.updateOne({ _id: id }, { $set: { llm_model: llmModel, updated_at: new Date() } });
  }

  async setTitle(id: string, title: string): Promise<void> {
    await this.conversations.updateOne({ _id: id }, { $set: { title, updated_at: new Date() } });
  }

  /** Applies the change to the owner's conversation; answers it as it then is, or null when it is not the owner's. */
  async update(id: string, userId: string, change: AppConversationChange): Promise<AppConversationRecord | null> {
    const set = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)); // absent: unchanged
    if (Object.keys(set).length > 0)
      await this.conversations.updateOne(
        { _id: id, created_by_user_id: userId },
        { $set: { ...set, updated_at: new Date() } },
      );
    const d = await this.conversations.findOne({ _id: id, created_by_user_id: userId });
    return d && toRecord(d);
  }

  /** Removes the record; true when there was one. */
  async delete(id: string): Promise<boolean> {
    return (await this.conversations.deleteOne({ _id: id })).deletedCount > 0;
  }

  /** Whether a conversation other than `exceptId` runs in the sandbox. */
  async otherUsesSandbox(sandboxId: string, exceptId: string): Promise<boolean> {
    return (
      (await this.conversations.findOne(
        { sandbox_id: sandboxId, _id: { $ne: exceptId } },
        { projection: { _id: 1 } },
      )) !== null
    );
  }

  /** The owner's conversations started as children of any of `parentIds`: parent id -> child ids. One query per page of parents. */
  async childrenOf(parentIds: readonly string[], userId: string): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (parentIds.length === 0) return out;
    const docs = await this.conversations
      .find(
        { parent_conversation_id: { $in: [...parentIds] }, created_by_user_id: userId },
        { projection: { _id: 1, parent_conversation_id: 1 } },
      )
      .toArray();
    for (const d of docs) out.set(d.parent_conversation_id!, [...(out.get(d.parent_conversation_id!) ?? []), d._id]);
    return out;
  }

  async getManyOwned(ids: readonly string[], userId: string): Promise<Map<string, AppConversationRecord>> {
    const docs = await this.conversations.find({ _id: { $in: [...ids] }, created_by_user_id: userId }).toArray();
    return new Map(docs.map((d) => [d._id, toRecord(d)]));
  }

  private filter(userId: string, f: AppConversationFilters): Filter<AppConversationDoc> {
    const filter: Filter<AppConversationDoc> = { created_by_user_id: userId };
    if (f.titleContains !== undefined) filter.title = { $regex: escapeRegExp(f.titleContains), $options: 'i' };
    if (f.sandboxId !== undefined) filter.sandbox_id = f.sandboxId;
    const range = (gte?: Date, lt?: Date) =>
      gte || lt ? { ...(gte ? { $gte: gte } : {}), ...(lt ? { $lt: lt } : {}) } : undefined;
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
  ): Promise<KeysetPage<AppConversationRecord>> {
    const filter = this.filter(userId, filters);
    const query = async (cursor: Document | null, order: Sort, n: number) => {
      return (
        await this.conversations
          .find(cursor ? { ...filter, $and: [cursor] } : filter)
          .sort(order)
          .limit(n)
          .toArray()
      ).map(toRecord);
    };
    return keysetPage(query, sort, limit, after, (r) => r[sort.field]);
  }

  async count(userId: string, filters: AppConversationFilters): Promise<number> {
    return countWithinBudget(this.conversations, 'app conversations count', this.filter(userId, filters));
  }
}
