/**
 * Appending a webhook batch to a conversation's log. Without transactions (the MongoDB-wire server here
 * has none) the order comes from a per-conversation lease: under it the batch is numbered after the last
 * stored seq, inserted in order (events already stored are skipped), and published to the live channel,
 * so the log is contiguous (1, 2, 3, ...) and the channel carries each conversation's events in seq order.
 */
import { Unavailable } from '../errors';
import type { LiveChannel } from '../live/live-channel';
import type { LiveItem } from '../live/live-slots';
import type { Logger } from '../logger';
import { isTransient, type Event } from '../schemas/events';
import type { ConversationsStore } from '../store/conversations-store';
import { metricsFromStats } from './usage';
import {
  TRACKED_STATE_KEYS,
  type ConversationStatesStore,
  type TrackedStateKey,
} from '../store/conversation-states-store';
import type { StoredEvent } from '../store/events-collection';
import type { EventsStore } from '../store/events-store';
import type { EventLayout } from '../store/event-blocks';
import { appendToLog } from './log-append';

export interface IngestResult {
  /** Events written to the log by this call. */
  stored: number;
  /** Events whose id the log already held (a retried batch): not written again. */
  already_stored: number;
  /** Transient events (StreamingDeltaEvent, a full_state snapshot): published live, never stored. */
  published_only: number;
}

export interface IngestDeps {
  events: EventsStore;
  conversations: ConversationsStore;
  /** Keeps the last execution_status and metrics reported, for the conversation views. */
  states?: Pick<ConversationStatesStore, 'record'>;
  live: Pick<LiveChannel, 'publish'>;
  log: Logger;
  maxEventsPerConversation: number;
  leaseTtlMs?: number;
  leaseWaitMs?: number;
}

/** How long an ingest lease lasts without renewal (its holder renews it every third of that). */
export const DEFAULT_LEASE_TTL_MS = 5_000;

/** The last value of each tracked state key among newly stored events (in log order), or null when none. */
function latestState(events: readonly Event[]): Partial<Record<TrackedStateKey, unknown>> | null {
  let latest: Partial<Record<TrackedStateKey, unknown>> | null = null;
  for (const e of events) {
    if (e.kind !== 'ConversationStateUpdateEvent') continue;
    // The OpenHands agent server reports its figures as `stats`; the built-in runtime as `metrics`.
    if (e.key === 'stats') {
      const metrics = metricsFromStats(e.value);
      if (metrics) latest = { ...(latest ?? {}), metrics };
      continue;
    }
    if (!TRACKED_STATE_KEYS.includes(e.key as TrackedStateKey)) continue;
    latest = { ...(latest ?? {}), [e.key as TrackedStateKey]: e.value };
  }
  return latest;
}

/**
 * What goes out live, in batch order: transient events as sent, the events stored now with their seq.
 * Each is taken out of `seqById` as it goes, so an id twice in the batch goes out once.
 */
function liveItems(batch: readonly Event[], seqById: Map<string, StoredEvent>, storedAt: number): LiveItem[] {
  return batch.flatMap((e): LiveItem[] => {
    if (isTransient(e)) return [{ seq: null, json: JSON.stringify(e) }];
    const d = seqById.get(e.id);
    if (!d) return [];
    seqById.delete(e.id);
    return [{ seq: d.seq, json: d.json, stored_at: storedAt }];
  });
}

export class EventIngest {
  constructor(private readonly deps: IngestDeps) {}

  async ingest(conversationId: string, batch: readonly Event[]): Promise<IngestResult> {
    const { conversations, live } = this.deps;
    const ttlMs = this.deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    // The common case, no batch of this conversation under way: the lease and what the append needs to
    // know are asked for together. When the lease was busy, the state is read again once it is taken.
    const reading = conversations.appendState(conversationId);
    reading.catch(() => undefined);
    let token = await conversations.tryIngestLease(conversationId, ttlMs);
    let state: EventLayout | undefined;
    const waited = token === null;
    if (!token) {
      token = await conversations.acquireIngestLease(conversationId, ttlMs, this.deps.leaseWaitMs ?? 10_000);
      if (!token) throw new Unavailable('Another batch for this conversation is being stored; retry shortly', 1);
    }
    const held = token;
    // The lease is short and renewed while the batch is stored: one left by a process that died blocks the
    // conversation for a few seconds, not for as long as the largest batch could take.
    const renewal = setInterval(
      () => void conversations.renewIngestLease(conversationId, held, ttlMs).catch(() => undefined),
      Math.floor(ttlMs / 3),
    );
    renewal.unref();
    try {
      const persistent = batch.filter((e) => !isTransient(e));
      const seen = new Set<string>();
      const unique = persistent.filter((e) => !seen.has(e.id) && seen.add(e.id)); // an id twice in a batch: once
      // Read together with the lease when it was free at once; else now that it is held.
      state = waited ? await conversations.appendState(conversationId) : await reading;
      // A log not in blocks when read may have been moved onto them before the lease was taken: read again.
      if (!state.blocks && !waited) state = await conversations.appendState(conversationId);
      const { stored, last, lastTimestamp, ordered } = await appendToLog(this.deps, conversationId, unique, state);
      const storedAt = Date.now();
      const seqById = new Map(stored.map((d) => [d.id, d]));
      const latest = latestState(unique.filter((e) => seqById.has(e.id)));
      const outgoing = liveItems(batch, seqById, storedAt);
      // Stored is what counts: if publishing fails, subscribers fill the gap from the log at the next event.
      const publishing = live.publish(conversationId, outgoing).catch((e: unknown) => {
        this.deps.log.warn({ err: e, conversationId }, 'publishing to the live channel failed');
      });
      // The last seq is recorded while the batch goes out live: one round trip instead of two.
      // All of them settled before the lease goes back: an update still under way could otherwise land
      // after the next writer's (and on FerretDB an update rewrites the whole record).
      const settled = await Promise.allSettled([
        publishing,
        stored.length > 0
          ? conversations.setLastSeq(conversationId, last, lastTimestamp ?? undefined, !ordered)
          : undefined,
        latest && this.deps.states ? this.deps.states.record(conversationId, latest) : undefined,
      ]);
      for (const r of settled) if (r.status === 'rejected') throw r.reason;
      return {
        stored: stored.length,
        already_stored: persistent.length - stored.length,
        published_only: batch.length - persistent.length,
      };
    } finally {
      clearInterval(renewal);
      await this.release(conversationId, held, Date.now() + ttlMs);
    }
  }

  /**
   * Gives the lease back. When the database is away at that moment, the release is tried again in the
   * background until it lands or the lease expires anyway: the conversation's next batch then waits for
   * the database to come back (seconds), not for the lease's whole TTL.
   */
  private async release(conversationId: string, token: string, expiresAt: number, delayMs = 100): Promise<void> {
    try {
      await this.deps.conversations.releaseIngestLease(conversationId, token);
    } catch {
      if (Date.now() + delayMs >= expiresAt) return;
      setTimeout(
        () => void this.release(conversationId, token, expiresAt, Math.min(delayMs * 2, 1000)),
        delayMs,
      ).unref();
    }
  }
}
