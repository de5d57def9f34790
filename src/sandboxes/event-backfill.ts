/**
 * No event lost on the way from a runtime that queues its webhook in memory (the OpenHands agent
 * server): a crash, a restart or a batch refused past its retries loses what it held. At each health
 * check of a running sandbox, each of its conversations' counts are compared (the runtime's own log
 * against what the control plane stored). A shortfall that stays the same from one check to the next
 * (not one the webhook is still catching up on) has the runtime's log read back oldest first and posted
 * to the same webhook it reports to, whose ingest stores each event once by id (those already there are
 * counted, not stored again). A runtime is not trusted: every call is bounded by the run's deadline,
 * pages per run are capped, page ids are checked, and a log read whole is not read again until its count
 * changes.
 */
import type { RuntimeClient } from './runtime-client';

export interface BackfillTarget {
  /** The conversations of the sandbox and how many events each has stored. */
  conversations(): Promise<{ id: string; stored: number }[]>;
  /** Posts a page to the conversation's webhook as the runtime would; answers the HTTP status. */
  post(conversationId: string, events: unknown[], timeoutMs: number): Promise<number>;
}

export interface BackfillResult {
  /** Conversations read back (in part or whole) in this run. */
  read: string[];
  /** Events posted (stored now or found stored already). */
  posted: number;
}

const PAGE = 100;
/** At most this many pages a run: the rest waits for the next. */
const MAX_PAGES = 50;
/** What a page id of the runtime's may look like (it goes back into a URL). */
const PAGE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const CALL_MS = 5000;
const MAX_REMEMBERED = 50_000;

export class EventBackfill {
  /** Conversation -> the runtime's count when its log was last read whole (this process's memory). */
  private readonly synced = new Map<string, number>();
  /** Conversation -> the shortfall seen at the previous check ("count/stored"). */
  private readonly shortfall = new Map<string, string>();
  /** Conversation -> where an unfinished read goes on. */
  private readonly resume = new Map<string, string>();

  async run(client: RuntimeClient, target: BackfillTarget, deadlineMs: number): Promise<BackfillResult> {
    const result: BackfillResult = { read: [], posted: 0 };
    const log = client.eventLog;
    if (!log) return result;
    const left = () => Math.min(CALL_MS, deadlineMs - Date.now());
    // Memory of conversations long gone is dropped now and then: the cost is one more count each.
    if (this.synced.size > MAX_REMEMBERED) this.synced.clear();
    if (this.shortfall.size > MAX_REMEMBERED) this.shortfall.clear();
    let pages = 0;
    for (const c of await target.conversations()) {
      if (left() <= 0 || pages >= MAX_PAGES) break;
      const count = await log.count(c.id, left());
      if (count === null || this.synced.get(c.id) === count) continue;
      if (count <= c.stored) {
        this.synced.set(c.id, count);
        this.shortfall.delete(c.id);
        continue;
      }
      // A shortfall seen for the first time may be the webhook's own batch on its way.
      const seen = `${count}/${c.stored}`;
      if (this.shortfall.get(c.id) !== seen && !this.resume.has(c.id)) {
        this.shortfall.set(c.id, seen);
        continue;
      }
      result.read.push(c.id);
      let pageId = this.resume.get(c.id) ?? null;
      for (;;) {
        if (left() <= 0 || pages >= MAX_PAGES) {
          if (pageId) this.resume.set(c.id, pageId);
          break;
        }
        const page = await log.page(c.id, pageId, PAGE, left());
        pages++;
        if (!page) break;
        if (page.items.length > 0) {
          const status = await target.post(c.id, page.items, Math.max(left(), 1000));
          if (status !== 200) break; // the control plane is away or refuses it: the next check tries again
          result.posted += page.items.length;
        }
        if (!page.next || !PAGE_ID.test(page.next) || page.next === pageId) {
          this.resume.delete(c.id);
          this.shortfall.delete(c.id);
          this.synced.set(c.id, count);
          break;
        }
        pageId = page.next;
      }
    }
    return result;
  }
}
