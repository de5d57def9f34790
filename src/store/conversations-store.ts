/**
 * Conversation records, as far as the event log needs them: the owner (searches and live subscriptions
 * of anyone else answer 404), the hash of the session key its runtime reports events with, and the
 * ingest lease that keeps one conversation's appends in order without transactions.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Db } from 'mongodb';
import { hashApiKey } from '../auth/api-key';
import { isDuplicateKey } from './errors';
import type { EventLayout } from './event-blocks';
import type { CollectionIndexes } from './mongo';

export interface Conversation {
  id: string;
  created_by_user_id: string;
  sandbox_id: string | null;
  created_at: Date;
  /** How its log is read (src/store/event-blocks.ts). */
  layout: EventLayout;
}

interface ConversationDoc {
  _id: string;
  created_by_user_id: string;
  sandbox_id: string | null;
  /** SHA-256 of the session key of the sandbox that runs the conversation. */
  session_key_hash: string | null;
  created_at: Date;
  /** Seq of the conversation's last stored event (0: none); written only under the ingest lease. */
  last_seq: number;
  /** Highest timestamp key stored (src/events/event-time.ts); absent on records older than the block layout. */
  last_timestamp?: string;
  /** Every event of the log carries its block (src/store/event-blocks.ts); absent: a log stored before, not migrated yet. */
  event_blocks?: boolean;
  /** Set once an event was stored with a timestamp below an earlier one's: pages then sort by time. */
  events_unordered?: boolean;
}

/** One document per conversation while a batch is appended; `_id` is the conversation id. */
interface IngestLeaseDoc {
  _id: string;
  token: string;
  expires_at: Date;
}

export const conversationsIndexes: CollectionIndexes = {
  collection: 'conversations',
  indexes: [
    { key: { created_by_user_id: 1, created_at: 1, _id: 1 }, name: 'by_owner' },
    // A runtime's conversation-info webhook names no conversation in its path: its key is looked up.
    { key: { session_key_hash: 1 }, name: 'by_session_key' },
    // A sandbox's conversations, for the health check's read-back of a runtime's log.
    { key: { sandbox_id: 1 }, name: 'by_sandbox' },
  ],
};

const layoutOf = (
  d: Pick<ConversationDoc, 'last_seq' | 'event_blocks' | 'events_unordered' | 'last_timestamp'>,
): EventLayout => ({
  blocks: d.event_blocks === true,
  ordered: d.events_unordered !== true,
  lastSeq: d.last_seq ?? 0,
  lastTimestamp: d.last_timestamp ?? null,
});

const toConversation = (d: ConversationDoc): Conversation => ({
  id: d._id,
  created_by_user_id: d.created_by_user_id,
  sandbox_id: d.sandbox_id,
  created_at: d.created_at,
  layout: layoutOf(d),
});

const APPEND_STATE_FIELDS = { last_seq: 1, last_timestamp: 1, event_blocks: 1, events_unordered: 1 } as const;

export class ConversationsStore {
  constructor(private readonly db: Db) {}

  private get conversations() {
    return this.db.collection<ConversationDoc>('conversations');
  }

  async create(input: {
    id?: string;
    userId: string;
    sandboxId?: string | null;
    sessionApiKey?: string | null;
  }): Promise<Conversation> {
    const doc: ConversationDoc = {
      _id: input.id ?? randomUUID(),
      created_by_user_id: input.userId,
      sandbox_id: input.sandboxId ?? null,
      session_key_hash: input.sessionApiKey ? hashApiKey(input.sessionApiKey) : null,
      created_at: new Date(),
      last_seq: 0,
      event_blocks: true,
    };
    await this.conversations.insertOne(doc);
    return toConversation(doc);
  }

  /** The conversation if it exists and belongs to the user; null otherwise (callers answer 404 either way). */
  async getOwned(id: string, userId: string): Promise<Conversation | null> {
    const d = await this.conversations.findOne({ _id: id, created_by_user_id: userId });
    return d && toConversation(d);
  }

  /** The conversation, whoever owns it: for checks that an id is free, never for answering a caller. */
  async get(id: string): Promise<Conversation | null> {
    const d = await this.conversations.findOne({ _id: id }, { projection: { session_key_hash: 0 } });
    return d && toConversation(d);
  }

  /** Removes the record (and so the session key its runtime reports events with). */
  async delete(id: string): Promise<void> {
    await this.conversations.deleteOne({ _id: id });
  }

  /** The sandbox that runs the conversation, if any. */
  async sandboxIdOf(id: string): Promise<string | null> {
    const d = await this.conversations.findOne({ _id: id }, { projection: { sandbox_id: 1 } });
    return d?.sandbox_id ?? null;
  }

  /** Seq of the last stored event, read by `_id` (the lookup FerretDB answers from an index). */
  async lastSeq(id: string): Promise<number> {
    const d = await this.conversations.findOne({ _id: id }, { projection: { last_seq: 1 } });
    return d?.last_seq ?? 0;
  }

  /** The log's layout (its end, highest time and marks) in one read by `_id`: what an append reads under the lease. */
  async appendState(id: string): Promise<EventLayout> {
    const d = await this.conversations.findOne({ _id: id }, { projection: APPEND_STATE_FIELDS });
    return layoutOf(d ?? { last_seq: 0 });
  }

  /** The conversation's layout, or null when it does not exist. */
  async layout(id: string): Promise<EventLayout | null> {
    const d = await this.conversations.findOne({ _id: id }, { projection: APPEND_STATE_FIELDS });
    return d && layoutOf(d);
  }

  /**
   * Records the new last seq (and the highest timestamp) after an append; never lowers either. Only the
   * holder of the ingest lease calls this. $max: the record only goes up, also should a writer that lost
   * its lease finish late. A writer that knows the log is unordered says so again (`unordered`): an update
   * on FerretDB rewrites the whole document, so a late writer's update could have dropped the mark.
   */
  async setLastSeq(id: string, seq: number, timestamp?: string, unordered = false): Promise<void> {
    await this.conversations.updateOne(
      { _id: id },
      {
        $max: { last_seq: seq, ...(timestamp !== undefined ? { last_timestamp: timestamp } : {}) },
        ...(unordered ? { $set: { events_unordered: true } } : {}),
      },
    );
  }

  /** Before an append whose timestamps go back in time: from now on its pages sort by time. */
  async markUnordered(id: string): Promise<void> {
    await this.conversations.updateOne({ _id: id }, { $set: { events_unordered: true } });
  }

  /**
   * After a migration gave every stored event its block, with what it learnt reading the whole log under
   * the ingest lease: where it ends, whether it is ordered, its highest time. Each only moves the way it
   * may (the end and the time up, the log to unordered), so a late writer's mark is never undone.
   */
  async markBlocks(
    id: string,
    facts: { lastSeq: number; ordered: boolean; lastTimestamp: string | null },
  ): Promise<void> {
    await this.conversations.updateOne(
      { _id: id },
      {
        $set: { event_blocks: true, ...(facts.ordered ? {} : { events_unordered: true }) },
        $max: {
          last_seq: facts.lastSeq,
          ...(facts.lastTimestamp !== null ? { last_timestamp: facts.lastTimestamp } : {}),
        },
      },
    );
  }

  /** A log whose seqs have a hole (a FerretDB batch bug of old): left to the sorted reads for good. */
  async markNoBlocks(id: string): Promise<void> {
    await this.conversations.updateOne({ _id: id }, { $set: { event_blocks: false } });
  }

  /** Conversations whose log predates the block layout (a scan; start-up migration only). */
  async withoutBlocks(limit: number): Promise<string[]> {
    // `false`: looked at and left on the sorted reads (see markNoBlocks); absent: not looked at yet.
    const docs = await this.conversations
      .find({ event_blocks: { $exists: false } }, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  /** True when the raw session key is the one of the sandbox running this conversation. */
  /** The conversations a sandbox runs and how many events each has stored. */
  async inSandbox(sandboxId: string): Promise<{ id: string; stored: number }[]> {
    const docs = await this.conversations
      .find({ sandbox_id: sandboxId }, { projection: { _id: 1, last_seq: 1 } })
      .toArray();
    return docs.map((d) => ({ id: d._id, stored: d.last_seq ?? 0 }));
  }

  /** Whether the key is the session key of any conversation (a runtime's webhook without a conversation in its path). */
  async anyWithSessionKey(rawKey: string): Promise<boolean> {
    return (
      (await this.conversations.findOne({ session_key_hash: hashApiKey(rawKey) }, { projection: { _id: 1 } })) !== null
    );
  }

  async sessionKeyMatches(id: string, rawKey: string): Promise<boolean> {
    const d = await this.conversations.findOne({ _id: id }, { projection: { session_key_hash: 1 } });
    if (!d?.session_key_hash) return false;
    const a = Buffer.from(d.session_key_hash, 'hex');
    const b = Buffer.from(hashApiKey(rawKey), 'hex');
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private get leases() {
    return this.db.collection<IngestLeaseDoc>('ingest_leases');
  }

  /**
   * Takes the conversation's ingest lease for `ttlMs`, waiting (bounded) while another append holds it.
   * Returns the token to release with, or null if it stayed busy.
   *
   * The lease is a document whose `_id` is the conversation id, so taking it is one insert that the
   * unique `_id` index makes atomic. (A conditional update is not: on FerretDB two concurrent
   * `updateOne({lease: null}, ...)` can both succeed.) An expired lease, left by a holder that died, is
   * removed by its token and taken over; should two writers still overlap, the unique
   * (conversation_id, seq) index refuses the second one's events.
   */
  async acquireIngestLease(id: string, ttlMs: number, waitMs: number): Promise<string | null> {
    const deadline = Date.now() + waitMs;
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      const token = await this.tryIngestLease(id, ttlMs);
      if (token) return token;
      const held = await this.leases.findOne({ _id: id });
      if (held && held.expires_at.getTime() < Date.now()) {
        // Only the lease as read: one its holder renewed meanwhile (a new expires_at) stays.
        await this.leases.deleteOne({ _id: id, token: held.token, expires_at: held.expires_at });
        continue;
      }
      if (Date.now() + delay > deadline) return null;
      await new Promise((res) => setTimeout(res, delay));
    }
  }

  /** One try at the lease: its token, or null when someone holds it (no wait, no takeover of an expired one). */
  async tryIngestLease(id: string, ttlMs: number): Promise<string | null> {
    const token = randomUUID();
    try {
      await this.leases.insertOne({ _id: id, token, expires_at: new Date(Date.now() + ttlMs) });
      return token;
    } catch (e) {
      if (isDuplicateKey(e)) return null;
      throw e;
    }
  }

  /** Extends the lease its holder still holds (a no-op once it was taken over). */
  async renewIngestLease(id: string, token: string, ttlMs: number): Promise<void> {
    await this.leases.updateOne({ _id: id, token }, { $set: { expires_at: new Date(Date.now() + ttlMs) } });
  }

  async releaseIngestLease(id: string, token: string): Promise<void> {
    await this.leases.deleteOne({ _id: id, token });
  }
}
