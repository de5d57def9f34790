/**
 * Messages queued for a conversation that is still starting (POST /api/v1/conversations/{id}/pending-
 * messages): kept until its start is READY, then delivered in the order they came, once each. A start
 * that ends in ERROR leaves them UNDELIVERED with the reason, never silently gone. The `_id` is the
 * conversation id and the message id, so a client that sends the same message again stores it once.
 */
import type { Db } from 'mongodb';
import { isDuplicateKey } from './errors';
import type { CollectionIndexes } from './mongo';

export const PENDING_MESSAGE_STATUSES = ['QUEUED', 'DELIVERED', 'UNDELIVERED'] as const;
export type PendingMessageStatus = (typeof PENDING_MESSAGE_STATUSES)[number];

export interface PendingMessageRecord {
  id: string;
  conversation_id: string;
  created_by_user_id: string;
  role: string;
  content: Record<string, unknown>[];
  status: PendingMessageStatus;
  detail: string | null;
  created_at: Date;
  updated_at: Date;
}

interface PendingMessageDoc extends Omit<PendingMessageRecord, 'id'> {
  _id: string;
  message_id: string;
  /** See firstAttempt. */
  first_attempt_at?: Date;
}

export const pendingMessagesIndexes: CollectionIndexes = {
  collection: 'pending_messages',
  indexes: [{ key: { conversation_id: 1, created_at: 1, _id: 1 }, name: 'by_conversation' }],
};

const key = (conversationId: string, messageId: string) => `${conversationId}:${messageId}`;
const toRecord = <D extends Partial<PendingMessageDoc> & Pick<PendingMessageDoc, 'message_id'>>({
  _id: _k,
  message_id,
  ...rest
}: D) => ({ id: message_id, ...rest });

export class PendingMessagesStore {
  constructor(private readonly db: Db) {}

  private get messages() {
    return this.db.collection<PendingMessageDoc>('pending_messages');
  }

  /**
   * Stores the message unless its id is stored already for this conversation; answers the stored one and
   * whether this call stored it.
   */
  async add(
    m: Omit<PendingMessageRecord, 'status' | 'detail' | 'created_at' | 'updated_at'>,
  ): Promise<{ record: PendingMessageRecord; fresh: boolean }> {
    const now = new Date();
    const { id, ...rest } = m;
    const doc: PendingMessageDoc = {
      _id: key(m.conversation_id, id),
      message_id: id,
      ...rest,
      status: 'QUEUED',
      detail: null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.messages.insertOne(doc);
      return { record: toRecord(doc), fresh: true };
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      const existing = await this.messages.findOne({ _id: doc._id });
      return { record: toRecord(existing!), fresh: false };
    }
  }

  /** The conversation's messages in the order they came (at most `limit`), without their content. */
  async list(conversationId: string, limit = 100): Promise<Omit<PendingMessageRecord, 'content'>[]> {
    const docs = await this.messages
      .find({ conversation_id: conversationId }, { projection: { content: 0 } })
      .sort({ created_at: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(toRecord);
  }

  /** The ids of the conversation's messages still waiting, in the order they came. */
  async queuedIds(conversationId: string): Promise<string[]> {
    const docs = await this.messages
      .find({ conversation_id: conversationId, status: 'QUEUED' }, { projection: { message_id: 1 } })
      .sort({ created_at: 1, _id: 1 })
      .toArray();
    return docs.map((d) => d.message_id);
  }

  /** One message, with its content (delivered one at a time: memory holds one). */
  async get(conversationId: string, messageId: string): Promise<PendingMessageRecord | null> {
    const d = await this.messages.findOne({ _id: key(conversationId, messageId) });
    return d && toRecord(d);
  }

  /** Where `messageId` stands among the conversation's waiting messages (1-based; 0 when it does not wait). */
  async position(conversationId: string, messageId: string): Promise<number> {
    return (await this.queuedIds(conversationId)).indexOf(messageId) + 1;
  }

  async mark(
    conversationId: string,
    messageId: string,
    status: PendingMessageStatus,
    detail: string | null = null,
  ): Promise<void> {
    await this.messages.updateOne(
      { _id: key(conversationId, messageId) },
      { $set: { status, detail, updated_at: new Date() } },
    );
  }

  /**
   * When the message was first sent to a runtime that does not drop a repeated message (null: never):
   * a retry looks for it in the runtime's log from then on.
   */
  async firstAttempt(conversationId: string, messageId: string): Promise<Date | null> {
    const d = await this.messages.findOne(
      { _id: key(conversationId, messageId) },
      { projection: { first_attempt_at: 1 } },
    );
    return d?.first_attempt_at instanceof Date ? d.first_attempt_at : null;
  }

  /** Records the first attempt (a later one keeps the first's time). */
  async recordFirstAttempt(conversationId: string, messageId: string, at: Date): Promise<void> {
    await this.messages.updateOne(
      { _id: key(conversationId, messageId), first_attempt_at: { $exists: false } },
      { $set: { first_attempt_at: at, updated_at: new Date() } },
    );
  }

  /** Marks every message still waiting UNDELIVERED with the reason; answers how many. */
  async giveUp(conversationId: string, detail: string): Promise<number> {
    const r = await this.messages.updateMany(
      { conversation_id: conversationId, status: 'QUEUED' },
      { $set: { status: 'UNDELIVERED', detail, updated_at: new Date() } },
    );
    return r.modifiedCount;
  }

  async deleteAll(conversationId: string): Promise<void> {
    await this.messages.deleteMany({ conversation_id: conversationId });
  }
}
