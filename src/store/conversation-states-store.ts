/**
 * What the runtime last reported of a conversation's state, from its ConversationStateUpdateEvents
 * (execution_status, metrics), kept by the ingest so a listing shows it without asking any runtime (and
 * while the sandbox is paused or gone). One document per conversation, written only by the ingest under
 * the conversation's lease: apart from `app_conversations`, whose other writers (rename, title) would
 * race a whole-document rewrite on FerretDB.
 */
import type { Db } from 'mongodb';
import { decodeKeys, encodeKeys } from './key-codec';

export interface ConversationState {
  execution_status: string | null;
  metrics: Record<string, unknown> | null;
  updated_at: Date;
}

interface ConversationStateDoc {
  _id: string;
  execution_status?: string;
  metrics?: Record<string, unknown>;
  updated_at: Date;
}

/** The state keys a listing shows; others are left to the event log. */
export const TRACKED_STATE_KEYS = ['execution_status', 'metrics'] as const;
export type TrackedStateKey = (typeof TRACKED_STATE_KEYS)[number];

export class ConversationStatesStore {
  constructor(private readonly db: Db) {}

  private get states() {
    return this.db.collection<ConversationStateDoc>('conversation_states');
  }

  /** Records the latest value of each tracked key (only the keys given change). */
  async record(conversationId: string, latest: Partial<Record<TrackedStateKey, unknown>>): Promise<void> {
    const set: Record<string, unknown> = { updated_at: new Date() };
    if (typeof latest.execution_status === 'string') set.execution_status = latest.execution_status;
    if (latest.metrics && typeof latest.metrics === 'object' && !Array.isArray(latest.metrics))
      set.metrics = encodeKeys(latest.metrics as Record<string, unknown>);
    if (Object.keys(set).length === 1) return;
    await this.states.updateOne({ _id: conversationId }, { $set: set }, { upsert: true });
  }

  /** The states of the given conversations (one query): id -> state. */
  async getMany(ids: readonly string[]): Promise<Map<string, ConversationState>> {
    if (ids.length === 0) return new Map();
    const docs = await this.states.find({ _id: { $in: [...ids] } }).toArray();
    return new Map(
      docs.map((d) => [
        d._id,
        {
          execution_status: d.execution_status ?? null,
          metrics: d.metrics ? decodeKeys(d.metrics) : null,
          updated_at: d.updated_at,
        },
      ]),
    );
  }

  async delete(conversationId: string): Promise<void> {
    await this.states.deleteOne({ _id: conversationId });
  }
}
