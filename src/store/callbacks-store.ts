/**
 * Callback processors' bookkeeping: how far each conversation's events were processed (callback_state),
 * and what each processor did, or why it failed, on each range of events (callback_results).
 */
import type { Db } from 'mongodb';
import { isDuplicateKey } from './errors';
import type { CollectionIndexes } from './mongo';

export interface CallbackResult {
  conversation_id: string;
  processor_index: number;
  kind: string;
  from_seq: number;
  to_seq: number;
  status: 'ok' | 'failed';
  /** What it did (title set, comment posted), or nothing for a range that asked for nothing. */
  actions: string[];
  detail: string | null;
  attempts: number;
  updated_at: Date;
}

export const callbacksIndexes: CollectionIndexes = {
  collection: 'callback_results',
  indexes: [{ key: { conversation_id: 1, processor_index: 1, to_seq: 1 }, name: 'by_conversation' }],
};

export class CallbacksStore {
  constructor(private readonly db: Db) {}

  private get state() {
    return this.db.collection<{ _id: string; processed_seq: number }>('callback_state');
  }

  private get results() {
    return this.db.collection<CallbackResult & { _id: string }>('callback_results');
  }

  async processedSeq(conversationId: string): Promise<number> {
    return (await this.state.findOne({ _id: conversationId }))?.processed_seq ?? 0;
  }

  /** Moves the processed mark forward (never back). */
  async markProcessed(conversationId: string, seq: number): Promise<void> {
    try {
      await this.state.updateOne({ _id: conversationId }, { $max: { processed_seq: seq } }, { upsert: true });
    } catch (e) {
      if (!isDuplicateKey(e)) throw e; // a concurrent first mark: retry as an update
      await this.state.updateOne({ _id: conversationId }, { $max: { processed_seq: seq } });
    }
  }

  async record(result: Omit<CallbackResult, 'updated_at'>): Promise<void> {
    const _id = `${result.conversation_id}/${result.processor_index}/${result.to_seq}`;
    await this.results.replaceOne({ _id }, { ...result, updated_at: new Date() }, { upsert: true });
  }

  /** True when the processor already did `action` for the conversation (a side effect is never repeated). */
  async done(conversationId: string, processorIndex: number, action: string): Promise<boolean> {
    return (
      (await this.results.countDocuments(
        { conversation_id: conversationId, processor_index: processorIndex, status: 'ok', actions: action },
        { limit: 1 },
      )) > 0
    );
  }

  private get summaries() {
    return this.db.collection<{ _id: string; conversation_id: string; summary: string | null; at: Date }>(
      'callback_summaries',
    );
  }

  /**
   * The summary the conversation's agent gave a processor, kept so that a round tried again posts the
   * same text and the agent is asked once however many processors post it; undefined when none is kept
   * (null: it had none to give).
   */
  async keptSummary(conversationId: string): Promise<string | null | undefined> {
    const d = await this.summaries.findOne({ _id: conversationId });
    return d ? d.summary : undefined;
  }

  /**
   * Keeps `summary` unless one is kept already (processors of one conversation run at once): answers
   * the kept one, which every processor then posts.
   */
  async keepSummary(conversationId: string, summary: string | null): Promise<string | null> {
    try {
      await this.summaries.insertOne({ _id: conversationId, conversation_id: conversationId, summary, at: new Date() });
      return summary;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return (await this.summaries.findOne({ _id: conversationId }))?.summary ?? null;
    }
  }

  /** Forgets what the processors did for the conversation (deleting it). */
  async deleteConversation(conversationId: string): Promise<void> {
    await Promise.all([
      this.state.deleteOne({ _id: conversationId }),
      this.results.deleteMany({ conversation_id: conversationId }),
      this.summaries.deleteOne({ _id: conversationId }),
    ]);
  }

  async list(conversationId: string): Promise<CallbackResult[]> {
    const docs = await this.results
      .find({ conversation_id: conversationId })
      .sort({ processor_index: 1, to_seq: 1 })
      .toArray();
    return docs.map(({ _id, ...r }) => r);
  }
}
