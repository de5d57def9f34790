import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { generateApiKey, hashApiKey } from '../auth/api-key';
import { countWithinBudget, type CollectionIndexes } from './mongo';

/** A key as listed: never the raw key, never its hash. */
export interface ApiKeyInfo {
  id: string;
  user_id: string;
  name: string;
  /** First characters of the raw key, enough for a person to tell keys apart. */
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

interface ApiKeyDoc extends Omit<ApiKeyInfo, 'id'> {
  _id: string;
  key_hash: string;
}

export const apiKeysIndexes: CollectionIndexes = {
  collection: 'api_keys',
  indexes: [
    { key: { key_hash: 1 }, name: 'key_hash_unique', unique: true },
    { key: { user_id: 1, created_at: 1, _id: 1 }, name: 'user_keys_by_age' },
  ],
};

const toInfo = ({ _id, key_hash: _hash, ...rest }: ApiKeyDoc): ApiKeyInfo => ({ id: _id, ...rest });

export class ApiKeysStore {
  constructor(private readonly db: Db) {}

  private get keys() {
    return this.db.collection<ApiKeyDoc>('api_keys');
  }

  /** Creates a key for a user. The raw key is in the result only; the store keeps its SHA-256. */
  async create(userId: string, name: string): Promise<{ key: ApiKeyInfo; raw: string }> {
    const raw = generateApiKey();
    const doc: ApiKeyDoc = {
      _id: randomUUID(),
      user_id: userId,
      name,
      prefix: raw.slice(0, 10),
      key_hash: hashApiKey(raw),
      created_at: new Date(),
      revoked_at: null,
    };
    await this.keys.insertOne(doc);
    return { key: toInfo(doc), raw };
  }

  /** How many of the user's keys are not revoked (what USER_MAX_API_KEYS counts). */
  async countActive(userId: string): Promise<number> {
    return countWithinBudget(this.keys, 'api keys countActive', { user_id: userId, revoked_at: null });
  }

  /** The user id behind a raw key, or null when the key is unknown or revoked. */
  async resolve(raw: string): Promise<string | null> {
    const doc = await this.keys.findOne({ key_hash: hashApiKey(raw) }, { projection: { user_id: 1, revoked_at: 1 } });
    return doc && doc.revoked_at === null ? doc.user_id : null;
  }

  /** A user's keys, oldest first, `limit` at a time after the (created_at ms, id) of the last one seen. */
  async pageForUser(
    userId: string,
    limit: number,
    after?: readonly [createdAtMs: number, id: string],
  ): Promise<{ items: ApiKeyInfo[]; last: [number, string] | null }> {
    const filter = after
      ? {
          user_id: userId,
          $or: [
            { created_at: { $gt: new Date(after[0]) } },
            { created_at: new Date(after[0]), _id: { $gt: after[1] } },
          ],
        }
      : { user_id: userId };
    const docs = await this.keys
      .find(filter, { projection: { key_hash: 0 } })
      .sort({ created_at: 1, _id: 1 })
      .limit(limit + 1)
      .toArray();
    const page = docs.slice(0, limit);
    const tail = page[page.length - 1];
    return {
      items: page.map((d) => toInfo({ ...d, key_hash: '' })),
      last: docs.length > limit && tail ? [tail.created_at.getTime(), tail._id] : null,
    };
  }

  /** Revokes one of a user's keys; false when that user has no such live key. */
  async revokeForUser(userId: string, id: string): Promise<boolean> {
    const r = await this.keys.updateOne(
      { _id: id, user_id: userId, revoked_at: null },
      { $set: { revoked_at: new Date() } },
    );
    return r.modifiedCount === 1;
  }

  /** Revokes a key by id; false when there is no such live key. */
  async revoke(id: string): Promise<boolean> {
    const r = await this.keys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: new Date() } });
    return r.modifiedCount === 1;
  }
}
