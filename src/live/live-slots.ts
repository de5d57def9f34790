/**
 * The live channel's storage: the documents of `live_events` (numbered slots "s<n>" and the floor) and
 * the lookups on them, each an `_id` equality (live-channel.ts says why) but for the removal of old slots.
 */
import type { Db } from 'mongodb';

export const LIVE_COLLECTION = 'live_events';
const FLOOR_ID = 'floor';

export interface LiveItem {
  /** The event's seq in the log; null for events that are never stored (StreamingDeltaEvent). */
  seq: number | null;
  json: string;
  /** When a stored event was stored (ms since the epoch), for the delivery lag; absent in older slots. */
  stored_at?: number;
}

export interface LiveDoc extends LiveItem {
  conversation_id: string;
}

export interface SlotDoc {
  _id: string;
  n: number;
  items: LiveDoc[];
  at: Date;
  /** The channel (api process) that published it; absent in older slots. */
  by?: string;
}

interface FloorDoc {
  _id: typeof FLOOR_ID;
  n: number;
}

const slotId = (n: number) => `s${n}`;

/** The slots and the floor in the database. */
export class LiveSlots {
  constructor(private readonly db: Db) {}

  private get slots() {
    return this.db.collection<SlotDoc | FloorDoc>(LIVE_COLLECTION);
  }

  async exists(n: number): Promise<boolean> {
    return (await this.slots.findOne({ _id: slotId(n) }, { projection: { _id: 1 } })) !== null;
  }

  async floor(): Promise<number> {
    const f = (await this.slots.findOne({ _id: FLOOR_ID })) as FloorDoc | null;
    return f?.n ?? 0;
  }

  /** The highest filled slot, found with O(log n) `_id` lookups from the floor or `known`, a slot known filled. */
  async head(known: number): Promise<number> {
    let lo = Math.max(known, await this.floor()); // filled (or the floor, below every slot)
    if (!(await this.exists(lo + 1))) return lo;
    let step = 1;
    let hi = lo + 1; // filled
    while (await this.exists(hi + step)) {
      lo = hi + step;
      hi = lo;
      step *= 2;
    }
    let missing = hi + step;
    lo = hi;
    while (missing - lo > 1) {
      const mid = Math.floor((lo + missing) / 2);
      if (await this.exists(mid)) lo = mid;
      else missing = mid;
    }
    return lo;
  }

  /** Fills slot `n`, published by channel `by`; a duplicate-key error when another process filled it first. */
  async insert(n: number, items: LiveDoc[], by: string): Promise<void> {
    await this.slots.insertOne({ _id: slotId(n), n, items, at: new Date(), by });
  }

  async read(n: number): Promise<SlotDoc | null> {
    return (await this.slots.findOne({ _id: slotId(n) })) as SlotDoc | null;
  }

  /** Moves the floor up to `newFloor` (never down) and removes the slots at or below it. */
  async raiseFloor(newFloor: number): Promise<void> {
    if (newFloor <= (await this.floor())) return;
    // The floor moves first, so a reader never waits on a slot that is gone.
    await this.slots.updateOne({ _id: FLOOR_ID }, { $set: { n: newFloor } }, { upsert: true });
    await this.slots.deleteMany({ n: { $lte: newFloor }, _id: { $ne: FLOOR_ID } });
  }
}
