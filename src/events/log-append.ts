/**
 * The ordered append of a batch to a conversation's log, run under the ingest lease: numbered after the
 * last seq, within the per-conversation cap, with retried events and a recorded end that fell behind sorted out.
 */
import { Conflict } from '../errors';
import type { Event } from '../schemas/events';
import { normalizeEventTime } from '../schemas/event-time';
import type { ConversationsStore } from '../store/conversations-store';
import { blockKey, blockOf, type EventLayout } from '../store/event-blocks';
import { eventKey, type StoredEvent } from '../store/events-collection';
import type { EventsStore } from '../store/events-store';

/**
 * The highest timestamp once these documents follow a log whose highest is `before`, or undefined when
 * their times go back (below `before` or below one another). A log with events but no recorded highest
 * time (stored before it was kept) counts as going back: its order is not known.
 */
function highestIfOrdered(
  before: string | null,
  docs: readonly StoredEvent[],
  lastSeq: number,
): string | null | undefined {
  if (before === null && lastSeq > 0) return undefined;
  let highest = before;
  for (const d of docs) {
    if (highest !== null && d.timestamp < highest) return undefined;
    highest = d.timestamp;
  }
  return highest;
}

/** Where a conversation's log ends as a batch being stored knows it; moved on as events are stored or found. */
export interface LogEnd {
  last: number;
  lastTimestamp: string | null;
  /** Whether the log may still be read in seq order: known for a log whose highest time is recorded. */
  ordered: boolean;
}

/** The documents of `events`, numbered from the seq after `last`. */
function numberedAfter(conversationId: string, events: readonly Event[], last: number): StoredEvent[] {
  return events.map((e, i) => ({
    _id: eventKey(conversationId, e.id),
    conversation_id: conversationId,
    id: e.id,
    kind: e.kind,
    source: e.source,
    timestamp: normalizeEventTime(e.timestamp)!,
    seq: last + 1 + i,
    block: blockKey(conversationId, blockOf(last + 1 + i)),
    json: JSON.stringify(e),
  }));
}

export interface LogAppendDeps {
  events: EventsStore;
  conversations: ConversationsStore;
  maxEventsPerConversation: number;
}

/**
 * Inserts the events the log does not hold yet, numbered after the last seq. The common case is one
 * ordered insert; an event that exists already (a retry) or a seq that exists (the recorded last seq
 * fell behind after a crash) stops it, and the rest is sorted out and inserted again.
 */
export function appendToLog(
  deps: LogAppendDeps,
  conversationId: string,
  events: readonly Event[],
  state: EventLayout,
): Promise<{ stored: StoredEvent[] } & LogEnd> {
  return new LogAppend(deps, conversationId, state).append(events);
}

/** One batch's append: where the log ends as it goes, and the steps that move that end on. */
class LogAppend {
  private readonly end: LogEnd;

  constructor(
    private readonly deps: LogAppendDeps,
    private readonly conversationId: string,
    private readonly state: EventLayout,
  ) {
    this.end = { last: state.lastSeq, lastTimestamp: state.lastTimestamp, ordered: state.ordered };
  }

  async append(events: readonly Event[]): Promise<{ stored: StoredEvent[] } & LogEnd> {
    const { conversationId, end } = this;
    let pending = [...events];
    const stored: StoredEvent[] = [];
    const cap = this.deps.maxEventsPerConversation;
    let checkedDuplicates = false;
    while (pending.length > 0) {
      if (end.last + pending.length > cap) {
        if (!checkedDuplicates) {
          // Near the cap a retry must still be answered: drop what is stored already, then judge.
          pending = await this.withoutStored(pending);
          checkedDuplicates = true;
          continue;
        }
        throw new Conflict(
          `Conversation ${conversationId} holds ${end.last} events; storing ${pending.length} more would pass the cap of ${cap} events per conversation (MAX_EVENTS_PER_CONVERSATION). Nothing more from this batch was stored.`,
        );
      }
      const docs = numberedAfter(conversationId, pending, end.last);
      // A log not in blocks is always read sorted; its move to blocks finds its order itself.
      if (end.ordered && this.state.blocks && highestIfOrdered(end.lastTimestamp, docs, end.last) === undefined) {
        if (!checkedDuplicates) {
          // A resent batch goes back in time by nature: judge only what is not stored yet.
          pending = await this.withoutStored(pending);
          checkedDuplicates = true;
          continue;
        }
        // Recorded before the append: no reader takes the log for ordered while it is not.
        await this.markUnordered();
      }
      const r = await this.deps.events.append(docs);
      stored.push(...docs.slice(0, r.inserted));
      end.last += r.inserted;
      for (const d of docs.slice(0, r.inserted))
        if (end.lastTimestamp === null || d.timestamp > end.lastTimestamp) end.lastTimestamp = d.timestamp;
      if (r.conflictAt === undefined) break;
      if (r.inserted > 0) await this.recordEnd();
      pending = await this.afterConflict(pending.slice(r.conflictAt));
    }
    return { stored, ...end };
  }

  /** The events of `batch` the log does not hold yet. */
  private async withoutStored(batch: Event[]): Promise<Event[]> {
    const existing = await this.deps.events.existingIds(
      this.conversationId,
      batch.map((e) => e.id),
    );
    return batch.filter((e) => !existing.has(e.id));
  }

  /**
   * After an insert stopped at `pending[0]`: moves the end to where the log really ends when its seq was
   * taken, or drops the events the log holds already. Returns what is still to be inserted.
   */
  private async afterConflict(pending: Event[]): Promise<Event[]> {
    const { events: log } = this.deps;
    const { conversationId, end } = this;
    // A seq that is taken means the recorded end is behind the log (a writer died between the two, or
    // the end was read while another batch was stored): the blocks past it tell the real one.
    if (this.state.blocks && (await this.catchUpFromBlocks())) return pending;
    const existing = await log.existingIds(
      conversationId,
      pending.map((e) => e.id),
    );
    if (existing.has(pending[0]!.id)) return pending.filter((e) => !existing.has(e.id));
    // The seq was taken: the recorded last seq is behind the log (a writer died between the two).
    const inLog = await log.lastInLog(conversationId);
    end.last = inLog.seq;
    // In an ordered log the last event holds the highest time; in any other the order is off already.
    if (inLog.timestamp !== null && (end.lastTimestamp === null || inLog.timestamp > end.lastTimestamp))
      end.lastTimestamp = inLog.timestamp;
    await this.recordEnd();
    return pending;
  }

  /** Moves the end past what the blocks hold beyond it and records it; false when they hold nothing more. */
  private async catchUpFromBlocks(): Promise<boolean> {
    const { end } = this;
    const found = await this.deps.events.endAfter(this.conversationId, end.last, undefined, end.lastTimestamp);
    if (found.seq > end.last) {
      end.last = found.seq;
      end.lastTimestamp = found.highest;
      if (found.backwards && end.ordered) {
        // What another writer stored past the recorded end goes back in time, unmarked (a mark lost).
        await this.markUnordered();
      }
      await this.recordEnd();
      return true;
    }
    return false;
  }

  private async markUnordered(): Promise<void> {
    await this.deps.conversations.markUnordered(this.conversationId);
    this.end.ordered = false;
  }

  /** Records the end on the conversation, so the next batch is numbered after it. */
  private recordEnd(): Promise<void> {
    const { last, lastTimestamp, ordered } = this.end;
    return this.deps.conversations.setLastSeq(this.conversationId, last, lastTimestamp ?? undefined, !ordered);
  }
}
