/**
 * Per-process fan-out of live events to the subscribers of each conversation, and the ordering rules of
 * one subscription: stored events go out exactly once in seq order (a gap is filled from the log),
 * transient events go out as they come.
 */
import type { LiveDoc } from './live-slots';
import { setTimeout as sleep } from 'node:timers/promises';

/** What a subscription reads from the log: a seq range, and the conversation's last seq. */
export interface EventLogReader {
  range(
    conversationId: string,
    afterSeq: number,
    limit: number,
    untilSeq?: number,
  ): Promise<{ seq: number; json: string }[]>;
  lastSeq(conversationId: string): Promise<number>;
}

/** What a subscription writes to; a websocket in production. */
export interface SubscriberSink {
  send(json: string): void;
  /** Bytes queued but not yet written to the peer. */
  bufferedAmount(): number;
  close(code: number, reason: string): void;
}

export interface SubscriptionLimits {
  /** Queued bytes past which a live event disconnects a subscriber that does not read (1013). */
  maxBufferedBytes: number;
  /** Live events held while catching up from the log. */
  maxPendingEvents: number;
  catchUpPageSize: number;
  /**
   * Events read from the log (catch-up, or a gap of the live channel) go out with back-pressure: past
   * this many queued bytes the next one waits for the subscriber to read.
   * @default maxBufferedBytes / 2
   */
  catchUpHighWaterBytes?: number;
  /**
   * How long such a wait may see no progress (queued bytes not going down) before the subscriber is
   * disconnected (1013): a reader that is slow but reads is never cut off, one that stopped is.
   * @default 10000
   */
  catchUpStallMs?: number;
}

export const DEFAULT_SUBSCRIPTION_LIMITS: SubscriptionLimits = {
  maxBufferedBytes: 8 * 1024 * 1024,
  maxPendingEvents: 10_000,
  catchUpPageSize: 500,
  catchUpHighWaterBytes: 4 * 1024 * 1024,
  catchUpStallMs: 10_000,
};

/** How often a back-pressure wait looks at the subscriber's queued bytes. */
const DRAIN_POLL_MS = 5;

export const CLOSE_TRY_AGAIN_LATER = 1013;

export class Subscription {
  private lastSeq = 0;
  private catchingUp = true;
  private pending: LiveDoc[] = [];
  private queue: Promise<void> = Promise.resolve();
  closed = false;

  constructor(
    readonly conversationId: string,
    private readonly sink: SubscriberSink,
    private readonly events: EventLogReader,
    private readonly limits: SubscriptionLimits,
    /** Told how long after its store each live stored event was sent (ms); not for events read from the log. */
    private readonly onDelivered?: (lagMs: number) => void,
  ) {}

  /**
   * Sends the stored events after `afterSeq` (null: none, only what comes next), then switches to live
   * events. Call after registering with the hub, so nothing appended meanwhile is missed.
   */
  async start(afterSeq: number | null): Promise<void> {
    const current = await this.events.lastSeq(this.conversationId);
    this.lastSeq = afterSeq ?? current;
    // The log is read only when there is something to send: a live-only subscriber costs one lookup.
    if (this.lastSeq < current) await this.sendFromLog(current);
    this.catchingUp = false;
    const held = this.pending;
    this.pending = [];
    for (const doc of held) this.enqueue(doc);
    await this.queue;
  }

  /** A live document for this conversation, from the hub. */
  onLive(doc: LiveDoc): void {
    if (this.closed) return;
    if (this.catchingUp) {
      this.pending.push(doc);
      if (this.pending.length > this.limits.maxPendingEvents) this.close(CLOSE_TRY_AGAIN_LATER, 'subscriber too slow');
      return;
    }
    this.enqueue(doc);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.sink.close(code, reason);
  }

  private enqueue(doc: LiveDoc): void {
    // A gap the log cannot fill now (busy or away): the client is told to reconnect later with after_id.
    this.queue = this.queue
      .then(() => this.deliver(doc))
      .catch(() => this.close(CLOSE_TRY_AGAIN_LATER, 'event log unavailable; reconnect with after_id'));
  }

  private async deliver(doc: LiveDoc): Promise<void> {
    if (this.closed) return;
    if (doc.seq === null) return this.write(doc.json);
    if (doc.seq <= this.lastSeq) return; // already sent from the log
    if (doc.seq > this.lastSeq + 1) await this.sendFromLog(doc.seq - 1); // missed on the channel: read the log
    if (this.closed || doc.seq <= this.lastSeq) return;
    this.write(doc.json);
    this.lastSeq = doc.seq;
    if (doc.stored_at !== undefined && !this.closed) this.onDelivered?.(Math.max(0, Date.now() - doc.stored_at));
  }

  /**
   * Sends the stored events up to `untilSeq` page by page, each event only once the subscriber has read
   * enough of what is queued (the log is never copied into the socket's buffer whole), and returns with
   * the queue drained below the high-water mark, so the live events that follow find room.
   */
  private async sendFromLog(untilSeq: number): Promise<void> {
    for (;;) {
      if (this.closed) return;
      const page = await this.events.range(this.conversationId, this.lastSeq, this.limits.catchUpPageSize, untilSeq);
      for (const e of page) {
        await this.waitForRoom();
        if (this.closed) return;
        this.sink.send(e.json);
        this.lastSeq = e.seq;
      }
      // A page may be cut short by its bytes (large events): done only when the range is sent or empty.
      if (page.length === 0 || this.lastSeq >= untilSeq) return this.waitForRoom();
    }
  }

  private write(json: string): void {
    if (this.closed) return;
    if (this.sink.bufferedAmount() > this.limits.maxBufferedBytes) {
      this.close(CLOSE_TRY_AGAIN_LATER, 'subscriber too slow');
      return;
    }
    this.sink.send(json);
  }

  /**
   * Waits until the subscriber's queued bytes are at most the high-water mark. Closes it (1013) when they
   * have not gone down for `catchUpStallMs`: it stopped reading.
   */
  private async waitForRoom(): Promise<void> {
    const highWater = this.limits.catchUpHighWaterBytes ?? this.limits.maxBufferedBytes / 2;
    const stallMs = this.limits.catchUpStallMs ?? 10_000;
    let lowest = Infinity;
    let progressAt = Date.now();
    for (;;) {
      if (this.closed) return;
      const queued = this.sink.bufferedAmount();
      if (queued <= highWater) return;
      if (queued < lowest) {
        lowest = queued;
        progressAt = Date.now();
      } else if (Date.now() - progressAt >= stallMs) {
        return this.close(CLOSE_TRY_AGAIN_LATER, 'subscriber too slow');
      }
      await sleep(DRAIN_POLL_MS);
    }
  }
}

export class EventHub {
  private readonly byConversation = new Map<string, Set<Subscription>>();

  add(sub: Subscription): () => void {
    let set = this.byConversation.get(sub.conversationId);
    if (!set) this.byConversation.set(sub.conversationId, (set = new Set()));
    set.add(sub);
    return () => {
      set.delete(sub);
      if (set.size === 0 && this.byConversation.get(sub.conversationId) === set)
        this.byConversation.delete(sub.conversationId);
    };
  }

  dispatch(doc: LiveDoc): void {
    const subs = this.byConversation.get(doc.conversation_id);
    if (subs) for (const s of subs) s.onLive(doc);
  }

  /** Whether any conversation has a subscriber here (sets are removed once empty): O(1). */
  get hasSubscribers(): boolean {
    return this.byConversation.size > 0;
  }

  get subscriberCount(): number {
    let n = 0;
    for (const s of this.byConversation.values()) n += s.size;
    return n;
  }
}
