/**
 * Sandbox records. The api inserts one (STARTING) and reads them; everything after that is written by
 * the sandbox's workflow through its activities, so the workflow stays the one writer of the status.
 * The session key is kept sealed (it is shown to the owner while the sandbox runs) beside its hash (what
 * webhook authentication compares).
 *
 * Use (touch) is written to a document of its own in `sandbox_usage`, never to the record: it is written
 * by the api on every ingested batch, and on FerretDB an update rewrites the whole document from what it
 * read, so a touch racing a status write could put the old status back (seen: a resumed sandbox read
 * back as ERROR).
 */
import type { Db, Filter } from 'mongodb';
import type { ExposedUrl, SandboxSpec, SandboxStatus } from '../schemas/sandboxes';
import { isDuplicateKey } from './errors';
import { countWithinBudget, type CollectionIndexes } from './mongo';
import type { RuntimeHandle } from './runtime-handle';

/** The statuses a running-sandbox quota counts: starting or running. */
export const ACTIVE_SANDBOX_STATUSES: readonly SandboxStatus[] = ['STARTING', 'RUNNING'];

export interface SandboxRecord {
  id: string;
  created_by_user_id: string;
  sandbox_spec_id: string;
  /** The spec as it was when the sandbox was created: later edits of the spec do not change it. */
  spec: SandboxSpec;
  status: SandboxStatus;
  status_detail: string | null;
  session_key_sealed: string;
  session_key_hash: string;
  exposed_urls: ExposedUrl[];
  runtime: RuntimeHandle | null;
  /**
   * The task queue of the worker host that holds the sandbox (a process sandbox's processes and files are
   * on one host); null or absent: any worker reaches it (docker, remote), or it is not placed yet.
   */
  host_queue?: string | null;
  /**
   * The organization its creator acted in when it was made (their current one): its running-sandbox
   * quota counts it. Absent in sandboxes made before organization quotas: no organization counts them.
   */
  organization_id?: string | null;
  created_at: Date;
  updated_at: Date;
  /** When it was created; later use is in `sandbox_usage` (see lastUsedAt). */
  last_used_at: Date;
}

type SandboxDoc = Omit<SandboxRecord, 'id'> & { _id: string };

export interface SandboxFilters {
  status?: SandboxStatus;
  sandboxSpecId?: string;
  createdAtGte?: Date;
  createdAtLt?: Date;
}

export const sandboxesIndexes: CollectionIndexes = {
  collection: 'sandboxes',
  indexes: [
    { key: { created_by_user_id: 1, created_at: -1, _id: -1 }, name: 'by_owner_newest_first' },
    // What an organization's running-sandbox quota counts (FerretDB pushes the equality on the organization down).
    { key: { organization_id: 1, status: 1 }, name: 'by_organization_status' },
  ],
};

/** Records made before the runtime choice ran the built-in runtime. */
const toRecord = ({ _id, ...rest }: SandboxDoc): SandboxRecord => ({
  id: _id,
  ...rest,
  spec: { ...rest.spec, runtime: rest.spec.runtime ?? 'built-in' },
});

export class SandboxesStore {
  constructor(private readonly db: Db) {}

  private get sandboxes() {
    return this.db.collection<SandboxDoc>('sandboxes');
  }

  async insert(record: SandboxRecord): Promise<void> {
    const { id, ...rest } = record;
    await this.sandboxes.insertOne({ _id: id, ...rest });
  }

  async get(id: string): Promise<SandboxRecord | null> {
    const d = await this.sandboxes.findOne({ _id: id });
    return d && toRecord(d);
  }

  /** The sandbox if it belongs to the user; null otherwise (callers answer 404 either way). */
  async getOwned(id: string, userId: string): Promise<SandboxRecord | null> {
    const d = await this.sandboxes.findOne({ _id: id });
    return d && d.created_by_user_id === userId ? toRecord(d) : null;
  }

  async getManyOwned(ids: readonly string[], userId: string): Promise<Map<string, SandboxRecord>> {
    return this.findMany({ _id: { $in: [...ids] }, created_by_user_id: userId });
  }

  /** The organization's sandboxes among these ids, whoever of its members made them. */
  async getManyInOrganization(ids: readonly string[], organizationId: string): Promise<Map<string, SandboxRecord>> {
    return this.findMany({ _id: { $in: [...ids] }, organization_id: organizationId });
  }

  private async findMany(filter: Filter<SandboxDoc>): Promise<Map<string, SandboxRecord>> {
    const docs = await this.sandboxes.find(filter).toArray();
    return new Map(docs.map((d) => [d._id, toRecord(d)]));
  }

  /** The user's sandboxes starting or running (what a running-sandbox quota counts). */
  async countActive(userId: string): Promise<number> {
    return countWithinBudget(this.sandboxes, 'sandboxes countActive', {
      created_by_user_id: userId,
      status: { $in: [...ACTIVE_SANDBOX_STATUSES] },
    });
  }

  /** The organization's sandboxes starting or running, whoever of its members made them. */
  async countActiveInOrganization(organizationId: string): Promise<number> {
    return countWithinBudget(this.sandboxes, 'sandboxes countActiveInOrganization', {
      organization_id: organizationId,
      status: { $in: [...ACTIVE_SANDBOX_STATUSES] },
    });
  }

  /**
   * The user's sandboxes, newest first, `limit` at a time after the (created_at ms, id) of the last one
   * seen. Deleted sandboxes are left out unless asked for by status.
   */
  async search(
    userId: string,
    filters: SandboxFilters,
    limit: number,
    after?: readonly [createdAtMs: number, id: string],
  ): Promise<{ items: SandboxRecord[]; last: [number, string] | null }> {
    const filter: Filter<SandboxDoc> = { created_by_user_id: userId, status: filters.status ?? { $ne: 'DELETED' } };
    if (filters.sandboxSpecId !== undefined) filter.sandbox_spec_id = filters.sandboxSpecId;
    const created: { $gte?: Date; $lt?: Date } = {};
    if (filters.createdAtGte) created.$gte = filters.createdAtGte;
    if (filters.createdAtLt) created.$lt = filters.createdAtLt;
    if (created.$gte || created.$lt) filter.created_at = created;
    if (after) {
      const at = new Date(after[0]);
      filter.$or = [{ created_at: { $lt: at } }, { created_at: at, _id: { $lt: after[1] } }];
    }
    const docs = await this.sandboxes
      .find(filter)
      .sort({ created_at: -1, _id: -1 })
      .limit(limit + 1)
      .toArray();
    const page = docs.slice(0, limit);
    const tail = page[page.length - 1];
    return {
      items: page.map(toRecord),
      last: docs.length > limit && tail ? [tail.created_at.getTime(), tail._id] : null,
    };
  }

  /** The workflow's status write (through an activity). */
  async setStatus(id: string, status: SandboxStatus, detail: string | null): Promise<void> {
    await this.sandboxes.updateOne({ _id: id }, { $set: { status, status_detail: detail, updated_at: new Date() } });
  }

  /** Where the provider started the runtime; a new session key when the provider issued its own. */
  async setRuntime(
    id: string,
    runtime: RuntimeHandle | null,
    exposedUrls: ExposedUrl[],
    sessionKey?: { sealed: string; hash: string },
  ): Promise<void> {
    const set: Partial<SandboxDoc> = { runtime, exposed_urls: exposedUrls, updated_at: new Date() };
    if (sessionKey) Object.assign(set, { session_key_sealed: sessionKey.sealed, session_key_hash: sessionKey.hash });
    await this.sandboxes.updateOne({ _id: id }, { $set: set });
  }

  /** Sandboxes of `hostQueue` deleted while no worker of that host took the call: their runtime and files are still there. */
  async leftOn(hostQueue: string, limit = 100): Promise<SandboxRecord[]> {
    const docs = await this.sandboxes
      .find({ host_queue: hostQueue, status: 'DELETED', runtime: { $ne: null } })
      .limit(limit)
      .toArray();
    return docs.map(toRecord);
  }

  /** Places the sandbox on `hostQueue` unless it is placed already; answers where it is. */
  async placeOn(id: string, hostQueue: string): Promise<string | null> {
    await this.sandboxes.updateOne(
      { _id: id, $or: [{ host_queue: { $exists: false } }, { host_queue: null }] },
      { $set: { host_queue: hostQueue } },
    );
    return (await this.get(id))?.host_queue ?? null;
  }

  private get usage() {
    return this.db.collection<{ _id: string; last_used_at: Date }>('sandbox_usage');
  }

  /** Records use of the sandbox (an API call about it, events from its runtime). */
  async touch(id: string, at = new Date()): Promise<void> {
    try {
      await this.usage.updateOne({ _id: id }, { $set: { last_used_at: at } }, { upsert: true });
    } catch (e) {
      // Two first touches raced to insert: the other one's document exists now.
      if (!isDuplicateKey(e)) throw e;
      await this.usage.updateOne({ _id: id }, { $set: { last_used_at: at } });
    }
  }

  /** Last use: what idle auto-pause measures (the creation time until the first touch). */
  async lastUsedAt(record: SandboxRecord): Promise<Date> {
    const u = await this.usage.findOne({ _id: record.id });
    return u?.last_used_at ?? record.last_used_at;
  }
}
