/**
 * The live channel between api processes: an append-only log of numbered slots in `live_events`, one
 * slot per published batch, `_id` "s<n>". Every process appends with a plain insert of the lowest free
 * slot (the unique `_id` decides races) and reads the next slot with an `_id` lookup, so any process can
 * serve any subscriber.
 *
 * Why not a capped collection and a tailable cursor: on FerretDB 1.24 (SQLite) a tailable awaitData
 * cursor re-runs its whole query every 10 ms. Measured here: one idle cursor on a 1,000-document capped
 * collection kept FerretDB at about 0.7 of a core, delivered 2,387 documents for 1,000 (re-deliveries),
 * and a new document took 577 ms to arrive. An `_id` equality is the one filter FerretDB's SQLite backend
 * hands to SQLite instead of decoding every document; it still reads every row (its `_id` index is on
 * another expression), so the collection is kept small: a reader is never more than a poll behind, and
 * slots older than `retainSlots` go every few seconds. On MongoDB the lookup uses the `_id` index.
 *
 * Slots stay contiguous: a publisher starts from a slot it knows is filled (its own last one, or the
 * reader's position) and takes the first free one, so no slot is ever skipped. Old slots are removed
 * past a retention count; the floor document tells a reader that fell behind where to resume.
 */
import type { Db } from 'mongodb';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger';
import { isDuplicateKey } from '../store/errors';
import { LiveSlots, type LiveDoc, type LiveItem } from './live-slots';
import { setTimeout as sleep } from 'node:timers/promises';

interface Pending {
  docs: LiveDoc[];
  resolve: () => void;
  reject: (e: unknown) => void;
}

export interface LiveChannelOptions {
  /** How often the reader looks for the next slot when it found none (ms). */
  pollMs: number;
  /** How often to look while no one in this process listens (see `start`). @default pollMs */
  idlePollMs?: number;
  /** Slots kept; older ones are removed by whichever process notices first. */
  retainSlots: number;
  /** How often the channel checks the floor and considers cleanup, beside the reader (ms). */
  maintenanceEveryMs?: number;
  /** Least time between two cleanups by one process (ms); 5 s by default. */
  cleanupEveryMs?: number;
  /** Told, for each slot another process published, how long after its publishing this reader read it (ms). */
  onRemoteSlot?: (lagMs: number) => void;
}

export class LiveChannel {
  /** The slots and the floor in `live_events`. */
  private readonly slots: LiveSlots;
  /** This process's name on the channel: its own slots are told apart from other processes'. */
  private readonly id = randomUUID();
  /** A slot known to be filled (or the floor): publishers and the reader start from here. */
  private known = 0;
  private reading: Promise<void> | undefined;
  private positioned: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  /** A publish came while the reader was reading rather than waiting: it looks again before it waits. */
  private wakePending = false;
  private lastCleanup = 0;
  private initialized = false;
  /** Batches waiting for the next slot: what a process publishes meanwhile goes into one slot. */
  private queue: Pending[] = [];
  private flushing = false;
  /**
   * Items of the slots this process wrote, by slot number, until its reader reaches them: the reader hands
   * them on from memory instead of reading them back (one round trip less between a store and its
   * subscribers here). Slots of other processes are read from the collection as before, in slot order.
   */
  private readonly own = new Map<number, LiveDoc[]>();
  /** The next slot the reader waits for, and the floor as maintenance last read it (see `maintain`). */
  private readerAt = 0;
  private floorSeen = 0;
  private maintaining: Promise<void> | undefined;
  private stopMaintenance: (() => void) | undefined;

  constructor(
    db: Db,
    private readonly log: Logger,
    private readonly opts: LiveChannelOptions = { pollMs: 10, retainSlots: 100 },
  ) {
    this.slots = new LiveSlots(db);
  }

  /** The highest filled slot, found with O(log n) `_id` lookups from the floor. */
  head(): Promise<number> {
    return this.slots.head(this.known);
  }

  /**
   * Appends one batch of a conversation's live events. Batches published while a slot is being written
   * share the next slot, in the order they came, so a busy process writes one slot per round trip.
   */
  publish(conversationId: string, items: readonly LiveItem[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({
        docs: items.map((i) => ({
          conversation_id: conversationId,
          seq: i.seq,
          json: i.json,
          ...(i.stored_at !== undefined && { stored_at: i.stored_at }),
        })),
        resolve,
        reject,
      });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        try {
          await this.insertSlot(batch.flatMap((p) => p.docs));
          for (const p of batch) p.resolve();
        } catch (e) {
          for (const p of batch) p.reject(e);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async insertSlot(items: LiveDoc[]): Promise<void> {
    if (!this.initialized) {
      // Never below the floor: a slot there would be inserted where no reader looks.
      this.known = Math.max(this.known, await this.head());
      this.initialized = true;
    }
    for (let n = this.known + 1; ; n++) {
      try {
        await this.slots.insert(n, items, this.id);
        this.known = Math.max(this.known, n);
        if (this.reading && !this.stopped) this.own.set(n, items);
        if (this.wake) this.wake();
        else this.wakePending = true;
        return;
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        // Taken by another process; when far behind (a long pause), find the head first.
        if (n - this.known > 8) n = await this.head();
      }
    }
  }

  /**
   * Starts the reader: every slot published from now on is handed to `deliver`, item by item, in order.
   * While `listening()` is false (no websocket subscriber in this process) it looks for slots of other
   * processes every `idlePollMs` instead of every `pollMs`: an idle api does not read the database a
   * hundred times a second. Slots it publishes itself wake it at once, and found slots are read one
   * after the other without a wait, so it never falls behind; a new subscriber's first event from
   * another process comes at most one idle poll later. Resolves once the reader knows where it starts
   * (the head as it was then): what is published after that is delivered.
   */
  start(deliver: (doc: LiveDoc) => void, listening: () => boolean = () => true): Promise<void> {
    if (!this.reading) {
      let positioned!: () => void;
      this.positioned = new Promise<void>((r) => (positioned = r));
      this.reading = this.read(deliver, listening, positioned);
      this.maintaining = this.maintain();
    }
    return this.positioned!;
  }

  private async read(deliver: (doc: LiveDoc) => void, listening: () => boolean, positioned: () => void): Promise<void> {
    let next = (await this.headWithRetry()) + 1;
    this.known = Math.max(this.known, next - 1);
    for (const n of this.own.keys()) if (n < next) this.own.delete(n); // written before the reader's start
    positioned();
    while (!this.stopped) {
      this.readerAt = next;
      // Cleanup moved past this reader (it fell behind): skip ahead (maintenance reads the floor).
      if (this.floorSeen >= next) {
        this.log.warn(
          { from: next, to: this.floorSeen + 1 },
          'live channel reader fell behind the retained slots; skipping ahead',
        );
        next = this.floorSeen + 1;
        for (const n of this.own.keys()) if (n < next) this.own.delete(n); // skipped: never handed on
        continue;
      }
      try {
        const mine = this.own.get(next);
        if (mine) {
          this.own.delete(next);
          next++;
          for (const item of mine) deliver(item);
          continue;
        }
        const slot = await this.slots.read(next);
        if (slot) {
          this.known = Math.max(this.known, next);
          next++;
          // Own slots this reader read from the collection (it got there before their insert returned).
          for (const n of this.own.keys()) if (n < next) this.own.delete(n);
          if (slot.by !== this.id) this.opts.onRemoteSlot?.(Math.max(0, Date.now() - slot.at.getTime()));
          for (const item of slot.items) deliver(item);
          continue;
        }
      } catch (e) {
        if (this.stopped) return;
        this.log.warn({ err: e }, 'live channel read failed; retrying');
        await sleep(500);
      }
      if (this.wakePending) {
        this.wakePending = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(
          resolve,
          listening() ? this.opts.pollMs : Math.max(this.opts.pollMs, this.opts.idlePollMs ?? this.opts.pollMs),
        );
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /**
   * Every `maintenanceEveryMs`, beside the reader (never in its way: a slot this process published is
   * handed on while maintenance waits on the database): reads the floor, so a reader that fell behind
   * cleanup skips ahead, and removes old slots.
   */
  private async maintain(): Promise<void> {
    while (!this.stopped) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.opts.maintenanceEveryMs ?? 2000);
        this.stopMaintenance = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (this.stopped) return;
      try {
        this.floorSeen = await this.slots.floor();
        if (this.readerAt > 0) await this.cleanup(this.readerAt - 1);
      } catch (e) {
        if (this.stopped) return;
        this.log.warn({ err: e }, 'live channel maintenance failed; retrying');
      }
    }
  }

  private async headWithRetry(): Promise<number> {
    for (;;) {
      try {
        return await this.head();
      } catch (e) {
        if (this.stopped) return 0;
        this.log.warn({ err: e }, 'live channel head lookup failed; retrying');
        await sleep(500);
      }
    }
  }

  /** Removes slots older than the retention count (at most every `cleanupEveryMs` per process). */
  private async cleanup(head: number): Promise<void> {
    const newFloor = head - this.opts.retainSlots;
    if (newFloor <= 0 || Date.now() - this.lastCleanup < (this.opts.cleanupEveryMs ?? 5000)) return;
    this.lastCleanup = Date.now();
    await this.slots.raiseFloor(newFloor);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.own.clear();
    this.wake?.();
    this.stopMaintenance?.();
    await Promise.all([this.reading?.catch(() => undefined), this.maintaining?.catch(() => undefined)]);
  }
}
