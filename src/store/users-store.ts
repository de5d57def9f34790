import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { isDuplicateKey } from './errors';
import { countWithinBudget, type CollectionIndexes } from './mongo';

export interface User {
  id: string;
  email: string;
  /** The organization the user acts in (their personal one at first). */
  current_org_id: string | null;
  created_at: Date;
}

interface UserDoc {
  _id: string;
  email: string;
  current_org_id: string | null;
  created_at: Date;
}

export const usersIndexes: CollectionIndexes = {
  collection: 'users',
  indexes: [{ key: { email: 1 }, name: 'email_unique', unique: true }],
};

export class DuplicateEmailError extends Error {
  constructor(readonly email: string) {
    super(`a user with email ${email} already exists`);
  }
}

const toUser = (d: UserDoc): User => ({
  id: d._id,
  email: d.email,
  current_org_id: d.current_org_id ?? null,
  created_at: d.created_at,
});

export class UsersStore {
  constructor(private readonly db: Db) {}

  private get users() {
    return this.db.collection<UserDoc>('users');
  }

  async create(email: string, currentOrgId: string | null = null, id: string = randomUUID()): Promise<User> {
    const doc: UserDoc = {
      _id: id,
      email: email.trim().toLowerCase(),
      current_org_id: currentOrgId,
      created_at: new Date(),
    };
    try {
      await this.users.insertOne(doc);
    } catch (e) {
      if (isDuplicateKey(e)) throw new DuplicateEmailError(doc.email);
      throw e;
    }
    return toUser(doc);
  }

  async get(id: string): Promise<User | null> {
    const d = await this.users.findOne({ _id: id });
    return d && toUser(d);
  }

  async findByEmail(email: string): Promise<User | null> {
    const d = await this.users.findOne({ email: email.trim().toLowerCase() });
    return d && toUser(d);
  }

  /** Sets the active organization; false when there is no such user. */
  async setCurrentOrg(userId: string, orgId: string): Promise<boolean> {
    return (await this.users.updateOne({ _id: userId }, { $set: { current_org_id: orgId } })).matchedCount === 1;
  }

  async count(): Promise<number> {
    return countWithinBudget(this.users, 'users count');
  }
}
