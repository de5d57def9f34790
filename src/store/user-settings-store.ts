/**
 * A user's own settings: the sparse diffs they laid over their organization's agent and conversation
 * settings (secrets in them sealed), and their personal preferences. One document per user, written by
 * POST /api/v1/settings and by activating a saved LLM profile; `user_version` counts the writes, and a
 * write lands only over the version it read: no lost update between the two on MongoDB; on FerretDB
 * 1.24, whose conditional updates are not atomic, two writes at the very same time may still both land
 * (test/ferretdb-behaviour.test.ts).
 */
import type { Db } from 'mongodb';
import { isDuplicateKey } from './errors';
import { decodeKeys, encodeKeys } from './key-codec';

export interface UserSettings {
  user_id: string;
  /** Sparse diff over the organization's agent_settings (secrets sealed). */
  agent_settings_diff: Record<string, unknown>;
  /** Sparse diff over the organization's conversation_settings. */
  conversation_settings_diff: Record<string, unknown>;
  language: string | null;
  git_user_name: string | null;
  git_user_email: string | null;
  enable_sound_notifications: boolean;
  user_consents_to_analytics: boolean | null;
  user_version: number;
  updated_at: Date;
}

interface UserSettingsDoc extends Omit<UserSettings, 'user_id'> {
  _id: string;
}

export function emptyUserSettings(userId: string): UserSettings {
  return {
    user_id: userId,
    agent_settings_diff: {},
    conversation_settings_diff: {},
    language: null,
    git_user_name: null,
    git_user_email: null,
    enable_sound_notifications: false,
    user_consents_to_analytics: null,
    user_version: 0,
    updated_at: new Date(0),
  };
}

export class UserSettingsStore {
  constructor(private readonly db: Db) {}

  private get settings() {
    return this.db.collection<UserSettingsDoc>('user_settings');
  }

  /** The user's settings; the empty ones when they never stored any. */
  async get(userId: string): Promise<UserSettings> {
    const d = await this.settings.findOne({ _id: userId });
    if (!d) return emptyUserSettings(userId);
    const { _id, ...rest } = d;
    return {
      ...emptyUserSettings(userId),
      ...rest,
      // Free-form objects (mcp_config, extra_headers) may hold keys the database refuses: stored escaped.
      agent_settings_diff: decodeKeys(rest.agent_settings_diff ?? {}) as Record<string, unknown>,
      conversation_settings_diff: decodeKeys(rest.conversation_settings_diff ?? {}) as Record<string, unknown>,
      user_id: _id,
    };
  }

  /**
   * Replaces the user's settings with `next` if they are still at `readVersion` (the user_version read;
   * 0: none stored); false when another write came first. next.user_version is the caller's.
   */
  async put(next: UserSettings, readVersion: number): Promise<boolean> {
    const { user_id, ...rest } = next;
    const doc = {
      ...rest,
      agent_settings_diff: encodeKeys(rest.agent_settings_diff) as Record<string, unknown>,
      conversation_settings_diff: encodeKeys(rest.conversation_settings_diff) as Record<string, unknown>,
    };
    if (readVersion > 0)
      return (await this.settings.replaceOne({ _id: user_id, user_version: readVersion }, doc)).matchedCount === 1;
    try {
      await this.settings.insertOne({ _id: user_id, ...doc });
      return true;
    } catch (e) {
      if (isDuplicateKey(e)) return false;
      throw e;
    }
  }
}
