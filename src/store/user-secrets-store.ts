/**
 * A user's own named secrets (tokens for tools, hosts, ...) and git provider tokens, sealed at rest,
 * copied into their starts. One document per secret: `<user id>/<name>` for a custom secret,
 * `<user id>/provider:<provider>` for a provider token (a name is an environment variable name, so the
 * two never meet). Every read is by the user's own id: at most their own secrets.
 */
import type { Db } from 'mongodb';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, NotFound } from '../errors';
import { isDuplicateKey } from './errors';
import type { CollectionIndexes } from './mongo';

interface UserSecretDoc {
  _id: string;
  user_id: string;
  /** Absent on secrets stored before provider tokens existed: custom. */
  kind?: 'custom' | 'provider';
  /** The secret's name, or the provider of a token. */
  name: string;
  value: string;
  description?: string | null;
  /** Provider tokens: the host the token is for (null: the provider's default). */
  host?: string | null;
  created_at?: Date;
  updated_at: Date;
}

/** A stored secret as listed: never its value. */
export interface UserSecretInfo {
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ProviderTokenInfo {
  host: string | null;
}

export const userSecretsIndexes: CollectionIndexes = {
  collection: 'user_secrets',
  indexes: [{ key: { user_id: 1, name: 1 }, name: 'by_user' }],
};

const customId = (userId: string, name: string) => `${userId}/${name}`;
const providerId = (userId: string, provider: string) => `${userId}/provider:${provider}`;
const isProvider = (d: UserSecretDoc) => d.kind === 'provider';
const info = (d: UserSecretDoc): UserSecretInfo => ({
  name: d.name,
  description: d.description ?? null,
  created_at: d.created_at ?? d.updated_at,
  updated_at: d.updated_at,
});

export class UserSecretsStore {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  private get secrets() {
    return this.db.collection<UserSecretDoc>('user_secrets');
  }

  /** Every secret document of the user (their own data only: at most the per-user cap plus the providers). */
  private async docs(userId: string): Promise<UserSecretDoc[]> {
    return this.secrets.find({ user_id: userId }).toArray();
  }

  /** Creates or overwrites a custom secret (the admin CLI and POST /api/v1/secrets). */
  async set(userId: string, name: string, value: string, description?: string | null): Promise<void> {
    const now = new Date();
    const existing = await this.secrets.findOne({ _id: customId(userId, name) });
    await this.secrets.replaceOne(
      { _id: customId(userId, name) },
      {
        user_id: userId,
        kind: 'custom',
        name,
        value: this.box.seal(value),
        description: description === undefined ? (existing?.description ?? null) : description,
        created_at: existing?.created_at ?? now,
        updated_at: now,
      },
      { upsert: true },
    );
  }

  async has(userId: string, name: string): Promise<boolean> {
    return (await this.secrets.findOne({ _id: customId(userId, name) }, { projection: { _id: 1 } })) !== null;
  }

  /** How many custom secrets the user has. */
  async count(userId: string): Promise<number> {
    return (await this.docs(userId)).filter((d) => !isProvider(d)).length;
  }

  /** Custom secrets by name, after `afterName`, optionally those whose name contains a string (case-insensitive). */
  async page(
    userId: string,
    limit: number,
    afterName?: string,
    nameContains?: string,
  ): Promise<{ items: UserSecretInfo[]; last: string | null }> {
    const needle = nameContains?.toLowerCase();
    const all = (await this.docs(userId))
      .filter(
        (d) =>
          !isProvider(d) &&
          (afterName === undefined || d.name > afterName) &&
          (needle === undefined || d.name.toLowerCase().includes(needle)),
      )
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const items = all.slice(0, limit).map(info);
    return { items, last: all.length > limit ? items[items.length - 1]!.name : null };
  }

  /** Renames and/or describes a secret; its value stays. NotFound, or Conflict when the new name is taken. */
  async update(userId: string, name: string, next: { name: string; description?: string | null }): Promise<void> {
    const doc = await this.secrets.findOne({ _id: customId(userId, name) });
    if (!doc || isProvider(doc)) throw new NotFound(`Secret ${name} not found`);
    const description = next.description === undefined ? (doc.description ?? null) : next.description;
    const updatedAt = new Date();
    if (next.name === name) {
      await this.secrets.updateOne({ _id: doc._id }, { $set: { description, updated_at: updatedAt } });
      return;
    }
    try {
      // The new one first (its unique _id refuses a taken name), then the old one goes.
      await this.secrets.insertOne({
        ...doc,
        _id: customId(userId, next.name),
        name: next.name,
        description,
        updated_at: updatedAt,
      });
    } catch (e) {
      if (isDuplicateKey(e)) throw new Conflict(`A secret named ${next.name} already exists`);
      throw e;
    }
    await this.secrets.deleteOne({ _id: doc._id });
  }

  /** Removes a custom secret; false when the user has none of that name. */
  async delete(userId: string, name: string): Promise<boolean> {
    return (
      (await this.secrets.deleteOne({ _id: customId(userId, name), kind: { $ne: 'provider' } })).deletedCount === 1
    );
  }

  /** Custom secrets, name to plain value (what a start receives). */
  async all(userId: string): Promise<Record<string, string>> {
    const docs = (await this.docs(userId)).filter((d) => !isProvider(d));
    return Object.fromEntries(docs.map((d) => [d.name, this.box.open(d.value)]));
  }

  /** Provider tokens in the clear, by provider. */
  async providerTokens(userId: string): Promise<Record<string, { token: string; host: string | null }>> {
    const docs = (await this.docs(userId)).filter(isProvider);
    return Object.fromEntries(docs.map((d) => [d.name, { token: this.box.open(d.value), host: d.host ?? null }]));
  }

  /** Which providers have a token, with their hosts (never the tokens). */
  async providersSet(userId: string): Promise<Record<string, ProviderTokenInfo>> {
    const docs = (await this.docs(userId)).filter(isProvider);
    return Object.fromEntries(docs.map((d) => [d.name, { host: d.host ?? null }]));
  }

  /** Stores a provider's token (sealed) and host. */
  async setProviderToken(userId: string, provider: string, token: string, host: string | null): Promise<void> {
    const now = new Date();
    const existing = await this.secrets.findOne({ _id: providerId(userId, provider) });
    await this.secrets.replaceOne(
      { _id: providerId(userId, provider) },
      {
        user_id: userId,
        kind: 'provider',
        name: provider,
        value: this.box.seal(token),
        host,
        created_at: existing?.created_at ?? now,
        updated_at: now,
      },
      { upsert: true },
    );
  }

  /** Changes the host of a stored token; false when the provider has none. */
  async setProviderHost(userId: string, provider: string, host: string | null): Promise<boolean> {
    return (
      (await this.secrets.updateOne({ _id: providerId(userId, provider) }, { $set: { host, updated_at: new Date() } }))
        .matchedCount === 1
    );
  }

  /** Removes every provider token of the user; how many there were. */
  async deleteProviderTokens(userId: string): Promise<number> {
    const ids = (await this.docs(userId)).filter(isProvider).map((d) => d._id);
    if (ids.length === 0) return 0;
    return (await this.secrets.deleteMany({ _id: { $in: ids } })).deletedCount;
  }
}
