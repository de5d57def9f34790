/**
 * Appending a webhook batch to a conversation's log. Without transactions (the MongoDB-wire server here
 * has none) the order comes from a per-conversation lease: under it the batch is deduplicated against the
 * log, numbered after the last stored seq, inserted in order, and published to the live channel, so the
 * log is contiguous (1, 2, 3, ...) and the channel carries each conversation's events in seq order.
 */
import { HttpError } from '../http/errors';
import type { LivePublisher } from '../live/live-channel';
import type { Logger } from '../logger';
import { TRANSIENT_KINDS, type Event } from '../schemas/events';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventsStore, StoredEvent } from '../store/events-store';
import { normalizeEventTime } from './event-time';

export interface IngestResult {
  /** Events written to the log by this call. */
  stored: number;
  /** Events whose id the log already held (a retried batch): not written again. */
  already_stored: number;
  /** Transient events (StreamingDeltaEvent): published live, never stored. */
  published_only: number;
}

export interface IngestDeps {
  events: EventsStore;
  conversations: ConversationsStore;
  live: LivePublisher;
  log: Logger;
  maxEventsPerConversation: number;
  leaseTtlMs?: number;
  leaseWaitMs?: number;
}

export class EventIngest {
  constructor(private readonly deps: IngestDeps) {}

  async ingest(conversationId: string, batch: readonly Event[]): Promise<IngestResult> {
    const { events, conversations, live } = this.deps;
    const token = await conversations.acquireIngestLease(conversationId, this.deps.leaseTtlMs ?? 30_000, this.deps.leaseWaitMs ?? 10_000);
    if (!token) throw new HttpError(503, 'Another batch for this conversation is being stored; retry shortly', { 'Retry-After': '1' });
    try {
      const persistent = batch.filter((e) => !TRANSIENT_KINDS.has(e.kind));
      const existing = await events.existingIds(conversationId, persistent.map((e) => e.id));
      const fresh: Event[] = [];
      for (const e of persistent) {
        if (existing.has(e.id)) continue;
        existing.add(e.id); // the same id twice in one batch is stored once
        fresh.push(e);
      }
      const last = await events.lastSeq(conversationId);
      const cap = this.deps.maxEventsPerConversation;
      if (last + fresh.length > cap) {
        throw new HttpError(
          409,
          `Conversation ${conversationId} holds ${last} events; storing ${fresh.length} more would pass the cap of ${cap} events per conversation (MAX_EVENTS_PER_CONVERSATION). Nothing from this batch was stored.`,
        );
      }
      const docs: StoredEvent[] = fresh.map((e, i) => ({
        conversation_id: conversationId,
        id: e.id,
        kind: e.kind,
        source: e.source,
        timestamp: normalizeEventTime(e.timestamp)!,
        seq: last + 1 + i,
        json: JSON.stringify(e),
      }));
      try {
        await events.append(docs);
      } catch (e) {
        // Only when a lease expired under a slow writer: its twin wrote these seqs first. Retrying is safe.
        if ((e as { code?: number }).code === 11000) {
          throw new HttpError(503, 'A concurrent write to this conversation got there first; retry the batch', { 'Retry-After': '1' });
        }
        throw e;
      }

      const seqById = new Map(docs.map((d) => [d.id, d]));
      const outgoing = batch.flatMap((e): { seq: number | null; json: string }[] => {
        if (TRANSIENT_KINDS.has(e.kind)) return [{ seq: null, json: JSON.stringify(e) }];
        const d = seqById.get(e.id);
        if (!d) return [];
        seqById.delete(e.id);
        return [{ seq: d.seq, json: d.json }];
      });
      try {
        await live.publish(conversationId, outgoing);
      } catch (e) {
        // Stored is what counts: subscribers fill the gap from the log at the next live event.
        this.deps.log.warn({ err: e, conversationId }, 'publishing to the live channel failed');
      }
      return {
        stored: docs.length,
        already_stored: persistent.length - docs.length,
        published_only: batch.length - persistent.length,
      };
    } finally {
      await conversations.releaseIngestLease(conversationId, token).catch(() => undefined);
    }
  }
}
