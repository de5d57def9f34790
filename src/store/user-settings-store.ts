/**
 * A user's own settings: the sparse diffs they laid over their organization's agent and conversation
 * settings (secrets in them sealed), and their personal preferences. One document per user, written
 * only through POST /api/v1/settings (one writer), `user_version` counting the writes.
 */
import type { Db } from 'mongodb';
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

  /** Replaces the user's settings with `next` (user_version is the caller's: the read one plus one). */
  async put(next: UserSettings): Promise<void> {
    const { user_id, ...rest } = next;
    await this.settings.replaceOne(
      { _id: user_id },
      {
        ...rest,
        agent_settings_diff: encodeKeys(rest.agent_settings_diff) as Record<string, unknown>,
        conversation_settings_diff: encodeKeys(rest.conversation_settings_diff) as Record<string, unknown>,
      },
      { upsert: true },
    );
  }
}
