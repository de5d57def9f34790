/**
 * The live channel: a MongoDB capped collection that every api process appends live events to and reads
 * with one tailable cursor, so a subscriber connected to any process sees events ingested by any other.
 * Works on real MongoDB and on FerretDB (capped collections and tailable/awaitData cursors).
 */
import type { Collection, Db, ObjectId } from 'mongodb';
import type { Logger } from '../logger';

export const LIVE_COLLECTION = 'live_events';

export interface LiveDoc {
  _id?: ObjectId;
  conversation_id: string;
  /** The event's seq in the log; null for events that are never stored (StreamingDeltaEvent). */
  seq: number | null;
  json: string;
  at: Date;
}

/** Creates the capped collection once (a no-op when it exists). */
export async function ensureLiveChannel(db: Db, sizeBytes: number): Promise<void> {
  const existing = await db.listCollections({ name: LIVE_COLLECTION }, { nameOnly: true }).toArray();
  if (existing.length === 0) {
    try {
      await db.createCollection(LIVE_COLLECTION, { capped: true, size: sizeBytes });
    } catch (e) {
      if ((e as { code?: number }).code !== 48) throw e; // created meanwhile by another process
    }
  }
  // A tailable cursor on an empty capped collection dies at once; one marker keeps it alive.
  const channel = db.collection<LiveDoc>(LIVE_COLLECTION);
  if ((await channel.estimatedDocumentCount()) === 0) {
    await channel.insertOne({ conversation_id: '', seq: null, json: '', at: new Date() });
  }
}

export class LivePublisher {
  constructor(private readonly db: Db) {}

  async publish(conversationId: string, items: readonly { seq: number | null; json: string }[]): Promise<void> {
    if (items.length === 0) return;
    const at = new Date();
    await this.db
      .collection<LiveDoc>(LIVE_COLLECTION)
      .insertMany(items.map((i) => ({ conversation_id: conversationId, seq: i.seq, json: i.json, at })), { ordered: true });
  }
}

/**
 * Reads the channel from "now" on with one tailable cursor and hands every document to `deliver`.
 * When the cursor dies (server restart, capped wrap-around) it reopens a little in the past and skips
 * the documents it already delivered, so nothing is lost or repeated across the reopen.
 */
export class LiveTailer {
  private stopped = false;
  private cursorClose: (() => Promise<void>) | undefined;
  private readonly seen = new Set<string>();
  private readonly seenOrder: string[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly deliver: (doc: LiveDoc) => void,
    private readonly log: Logger,
    private readonly opts: { reopenLookbackMs: number; awaitMs: number } = { reopenLookbackMs: 30_000, awaitMs: 1000 },
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  private remember(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    this.seenOrder.push(id);
    if (this.seenOrder.length > 50_000) this.seen.delete(this.seenOrder.shift()!);
    return true;
  }

  private async loop(): Promise<void> {
    let since = new Date();
    let failures = 0;
    while (!this.stopped) {
      const channel: Collection<LiveDoc> = this.db.collection<LiveDoc>(LIVE_COLLECTION);
      const cursor = channel.find({ at: { $gte: since } }, { tailable: true, awaitData: true, maxAwaitTimeMS: this.opts.awaitMs });
      this.cursorClose = () => cursor.close();
      try {
        for await (const doc of cursor) {
          failures = 0;
          if (this.stopped) break;
          if (!this.remember(doc._id!.toHexString())) continue;
          if (doc.at > since) since = doc.at;
          if (doc.conversation_id) this.deliver(doc);
        }
      } catch (e) {
        if (this.stopped) break;
        failures++;
        if (failures === 1 || failures % 20 === 0) this.log.warn({ err: e }, 'live channel cursor failed; reopening');
      } finally {
        await cursor.close().catch(() => undefined);
      }
      if (this.stopped) break;
      since = new Date(since.getTime() - this.opts.reopenLookbackMs);
      await new Promise((r) => setTimeout(r, Math.min(2000, 50 * 2 ** Math.min(failures, 6))));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.cursorClose?.().catch(() => undefined);
    await this.running?.catch(() => undefined);
  }
}
