/**
 * Users' saved LLM profiles, one document each: a stable id (`_id`, a UUID a start names), the user's
 * name for it (unique per user), the LLM (secrets sealed, free-form keys escaped) and a revision that
 * grows with each save. Which one a user activated last is kept beside them, in `active_llm_profiles`
 * (one document per user), so that no write of a profile races a write of the pointer. Every read is by
 * the user's own id: at most their own profiles.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { Conflict } from '../errors';
import { isDuplicateKey } from './errors';
import { decodeKeys, encodeKeys } from './key-codec';
import type { CollectionIndexes } from './mongo';

export interface LlmProfile {
  id: string;
  user_id: string;
  name: string;
  /** The LLM settings, secrets sealed. */
  llm: Record<string, unknown>;
  revision: number;
  created_at: Date;
  updated_at: Date;
}

interface LlmProfileDoc extends Omit<LlmProfile, 'id'> {
  _id: string;
  /** Which of the user's MAX_PROFILES_PER_USER places it takes (unique per user): the bound under saves at once. */
  slot: number;
}

export const llmProfilesIndexes: CollectionIndexes = {
  collection: 'llm_profiles',
  indexes: [
    { key: { user_id: 1, name: 1 }, name: 'user_profile_name', unique: true },
    { key: { user_id: 1, slot: 1 }, name: 'user_profile_slot', unique: true },
  ],
};

const fromDoc = ({ _id, slot: _slot, llm, ...rest }: LlmProfileDoc): LlmProfile => ({
  ...rest,
  id: _id,
  llm: decodeKeys(llm) as Record<string, unknown>,
});

export class LlmProfilesStore {
  constructor(private readonly db: Db) {}

  private get profiles() {
    return this.db.collection<LlmProfileDoc>('llm_profiles');
  }

  private get active() {
    return this.db.collection<{ _id: string; profile_id: string }>('active_llm_profiles');
  }

  /** The user's profiles by name. */
  async list(userId: string): Promise<LlmProfile[]> {
    return (await this.profiles.find({ user_id: userId }).sort({ name: 1 }).toArray()).map(fromDoc);
  }

  async byName(userId: string, name: string): Promise<LlmProfile | null> {
    const d = await this.profiles.findOne({ user_id: userId, name });
    return d ? fromDoc(d) : null;
  }

  async byId(userId: string, id: string): Promise<LlmProfile | null> {
    const d = await this.profiles.findOne({ _id: id, user_id: userId });
    return d ? fromDoc(d) : null;
  }

  /**
   * Saves `llm` under `name`: a profile of that name keeps its id and gets the next revision; a new one
   * takes one of the user's `max` slots (revision 0), or is not made when all are taken (null). A slot
   * is unique per user, so saves at once cannot pass the bound, and no save is undone after it was made.
   * Answers the profile as saved.
   */
  async save(userId: string, name: string, llm: Record<string, unknown>, max: number): Promise<LlmProfile | null> {
    const stored = encodeKeys(llm) as Record<string, unknown>;
    for (let attempt = 0; attempt < 2 * max + 5; attempt++) {
      const updated = await this.profiles.findOneAndUpdate(
        { user_id: userId, name },
        { $set: { llm: stored, updated_at: new Date() }, $inc: { revision: 1 } },
        { returnDocument: 'after' },
      );
      if (updated) return fromDoc(updated);
      const taken = new Set(
        (await this.profiles.find({ user_id: userId }, { projection: { slot: 1 } }).toArray()).map((d) => d.slot),
      );
      const free = Array.from({ length: max }, (_, i) => i).filter((i) => !taken.has(i));
      if (free.length === 0) return null;
      const now = new Date();
      // A random free slot: saves at once seldom pick the same one.
      const doc: LlmProfileDoc = {
        _id: randomUUID(),
        user_id: userId,
        name,
        slot: free[Math.floor(Math.random() * free.length)]!,
        llm: stored,
        revision: 0,
        created_at: now,
        updated_at: now,
      };
      try {
        await this.profiles.insertOne(doc);
        return fromDoc(doc);
      } catch (e) {
        if (!isDuplicateKey(e)) throw e; // the name or the slot was taken meanwhile: look again
      }
    }
    throw new Conflict(`Too many saves of your profiles at once; try again`);
  }

  /** Renames; false when the user has no profile of that name. Conflict when `to` is another profile's. */
  async rename(userId: string, from: string, to: string): Promise<boolean> {
    try {
      const r = await this.profiles.updateOne(
        { user_id: userId, name: from },
        { $set: { name: to, updated_at: new Date() } },
      );
      return r.matchedCount > 0;
    } catch (e) {
      if (isDuplicateKey(e)) throw new Conflict(`You have a profile named ${to} already: delete or rename it first`);
      throw e;
    }
  }

  /** Deletes the profile (and the pointer to it, when it was the active one); answers whether it existed. */
  async delete(userId: string, name: string): Promise<boolean> {
    const d = await this.profiles.findOneAndDelete({ user_id: userId, name });
    if (!d) return false;
    await this.active.deleteOne({ _id: userId, profile_id: d._id });
    return true;
  }

  async activeId(userId: string): Promise<string | null> {
    return (await this.active.findOne({ _id: userId }))?.profile_id ?? null;
  }

  async setActive(userId: string, profileId: string): Promise<void> {
    await this.active.replaceOne({ _id: userId }, { profile_id: profileId }, { upsert: true });
  }
}
