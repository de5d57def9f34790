/**
 * Moving conversations stored before the block layout (src/store/event-blocks.ts) onto it, at api
 * start-up, in the background. Until a conversation is moved its pages are read the older way (one
 * query sorting the conversation); they read the same before and after. Each conversation is moved
 * under its ingest lease, so no batch is appended meanwhile; one whose lease is busy is tried again later.
 */
import type { Logger } from '../logger';
import type { ConversationsStore } from '../store/conversations-store';
import type { EventsStore } from '../store/events-store';
import { DEFAULT_LEASE_TTL_MS } from './ingest';

export interface LayoutMigrationDeps {
  conversations: Pick<
    ConversationsStore,
    'withoutBlocks' | 'acquireIngestLease' | 'renewIngestLease' | 'releaseIngestLease' | 'markBlocks' | 'markNoBlocks'
  >;
  events: Pick<EventsStore, 'addBlocks'>;
  log: Logger;
}

/** Moves one conversation; false when its lease was busy (an append under way). */
export async function migrateConversationLayout(deps: LayoutMigrationDeps, conversationId: string): Promise<boolean> {
  const { conversations } = deps;
  const ttlMs = DEFAULT_LEASE_TTL_MS;
  const token = await conversations.acquireIngestLease(conversationId, ttlMs, 1000);
  if (!token) return false;
  const renew = () => void conversations.renewIngestLease(conversationId, token, ttlMs).catch(() => undefined);
  const renewal = setInterval(renew, Math.floor(ttlMs / 3));
  renewal.unref();
  try {
    const facts = await deps.events.addBlocks(conversationId, renew);
    if (!facts.complete) {
      // Seqs missing: a page of blocks would stop at the hole. The sorted reads serve it, as before.
      await conversations.markNoBlocks(conversationId);
      deps.log.warn(
        { conversationId, lastSeq: facts.lastSeq },
        'conversation log has a hole in its seqs; it stays on the sorted reads',
      );
      return true;
    }
    await conversations.markBlocks(conversationId, facts);
    deps.log.info(
      { conversationId, updated: facts.updated, ordered: facts.ordered },
      'conversation log moved to the block layout',
    );
    return true;
  } finally {
    clearInterval(renewal);
    await conversations.releaseIngestLease(conversationId, token).catch(() => undefined);
  }
}

/**
 * Moves every conversation that is not on the block layout yet. Passes over them until none is left or
 * a pass moved none (every one left was busy), at most `passes` times, `pauseMs` apart. Returns how many it moved.
 */
export async function migrateEventLayouts(
  deps: LayoutMigrationDeps,
  opts: { passes?: number; pauseMs?: number; stopped?: () => boolean } = {},
): Promise<number> {
  const passes = opts.passes ?? 20;
  let moved = 0;
  for (let pass = 0; pass < passes && !opts.stopped?.(); pass++) {
    const ids = await deps.conversations.withoutBlocks(10_000);
    if (ids.length === 0) return moved;
    let movedNow = 0;
    for (const id of ids) {
      if (opts.stopped?.()) return moved;
      if (await migrateConversationLayout(deps, id)) movedNow++;
    }
    moved += movedNow;
    if (movedNow === ids.length) continue;
    await new Promise((r) => setTimeout(r, opts.pauseMs ?? 5000).unref());
  }
  return moved;
}
