/**
 * No event lost on the way from a runtime that queues its webhook in memory (the OpenHands agent
 * server): a crash, a restart or a batch refused past its retries loses what it held. At every health
 * check of a running sandbox, each of its conversations' counts are compared (the runtime's own log
 * against what the control plane stored); where the runtime has more, its log is read back oldest first
 * and posted to the same webhook it reports to, whose ingest stores each event once by id (the events
 * already there are counted, not stored again). Bounded per check by a deadline; what is left waits for
 * the next check. A conversation whose count was fully read is not read again until its count changes.
 */
import type { RuntimeClient } from './runtime-client';

export interface BackfillTarget {
  /** The conversations of the sandbox and how many events each has stored. */
  conversations(): Promise<{ id: string; stored: number }[]>;
  /** Posts a page to the conversation's webhook as the runtime would; answers the HTTP status. */
  post(conversationId: string, events: unknown[]): Promise<number>;
}

export interface BackfillResult {
  /** Conversations read back (in part or whole) at this check. */
  read: string[];
  /** Events posted (stored now or found stored already). */
  posted: number;
}

const PAGE = 100;

export class EventBackfill {
  /** Conversation -> the runtime's count when its log was last read whole (this process's memory). */
  private readonly synced = new Map<string, number>();
  /** Conversation -> where an unfinished read goes on. */
  private readonly resume = new Map<string, string>();

  async run(client: RuntimeClient, target: BackfillTarget, deadlineMs: number, callTimeoutMs = 5000): Promise<BackfillResult> {
    const result: BackfillResult = { read: [], posted: 0 };
    const log = client.eventLog;
    if (!log) return result;
    for (const c of await target.conversations()) {
      if (Date.now() >= deadlineMs) break;
      const count = await log.count(c.id, callTimeoutMs);
      if (count === null || this.synced.get(c.id) === count) continue;
      if (count <= c.stored) {
        this.synced.set(c.id, count);
        continue;
      }
      result.read.push(c.id);
      let pageId = this.resume.get(c.id) ?? null;
      for (;;) {
        if (Date.now() >= deadlineMs) {
          if (pageId) this.resume.set(c.id, pageId);
          break;
        }
        const page = await log.page(c.id, pageId, PAGE, callTimeoutMs);
        if (!page) break;
        if (page.items.length > 0) {
          const status = await target.post(c.id, page.items);
          if (status !== 200) break; // the control plane is away or refuses it: the next check tries again
          result.posted += page.items.length;
        }
        if (!page.next) {
          this.resume.delete(c.id);
          this.synced.set(c.id, count);
          break;
        }
        pageId = page.next;
      }
    }
    return result;
  }

  /** Forgets a conversation (deleted, or its sandbox is). */
  forget(conversationId: string): void {
    this.synced.delete(conversationId);
    this.resume.delete(conversationId);
  }
}
