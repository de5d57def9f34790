/** A user's own named secrets (tokens for tools, hosts, ...), sealed at rest, copied into their starts. */
import type { Db } from 'mongodb';
import type { SecretBox } from '../auth/secret-box';
import type { CollectionIndexes } from './mongo';

interface UserSecretDoc {
  /** `<user id>/<name>` */
  _id: string;
  user_id: string;
  name: string;
  value: string;
  updated_at: Date;
}

export const userSecretsIndexes: CollectionIndexes = {
  collection: 'user_secrets',
  indexes: [{ key: { user_id: 1, name: 1 }, name: 'by_user' }],
};

export class UserSecretsStore {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  private get secrets() {
    return this.db.collection<UserSecretDoc>('user_secrets');
  }

  async set(userId: string, name: string, value: string): Promise<void> {
    await this.secrets.updateOne(
      { _id: `${userId}/${name}` },
      { $set: { user_id: userId, name, value: this.box.seal(value), updated_at: new Date() } },
      { upsert: true },
    );
  }

  /** Name to plain value. */
  async all(userId: string): Promise<Record<string, string>> {
    const docs = await this.secrets.find({ user_id: userId }).toArray();
    return Object.fromEntries(docs.map((d) => [d.name, this.box.open(d.value)]));
  }
}
