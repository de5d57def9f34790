/**
 * The block layout of the event log (src/store/event-blocks.ts) for logs stored before it: a log reads
 * the same before and after it is moved onto the layout, one with a hole in its seqs stays on the sorted
 * reads, and one whose batch is being stored is left for a later pass.
 */
import pino from 'pino';
import { migrateConversationLayout, migrateEventLayouts } from '../src/events/event-layout-migration';
import {
  at,
  conversations,
  events,
  expectSameAsSorted,
  legacyConversation,
  seen,
  t,
  useEventBlocksApi,
} from './helpers/event-blocks';
import { sample } from './helpers/event-samples';

describe('event log in blocks', () => {
  useEventBlocksApi();

  it('a log stored before the layout reads the same before and after it is moved onto it (ordered and not)', async () => {
    const legacy = await legacyConversation(Array.from({ length: 260 }, (_, i) => at(Math.floor(i / 2))));
    const ordered = legacy.conversationId;
    const unordered = (await legacyConversation(Array.from({ length: 140 }, (_, i) => at(i % 70)))).conversationId;
    const before = { ordered: await seen(ordered), unordered: await seen(unordered) };
    expect(before.ordered.asc).toHaveLength(260);
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: false });

    const log = pino({ level: 'silent' });
    const deps = { conversations, events, log };
    expect(await migrateEventLayouts(deps, { passes: 3, pauseMs: 10 })).toBeGreaterThanOrEqual(2);
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: true, ordered: true, lastSeq: 260 });
    expect(await conversations.layout(unordered)).toMatchObject({ blocks: true, ordered: false, lastSeq: 140 });
    const missing = await t.database.db
      .collection('events')
      .countDocuments({ conversation_id: { $in: [ordered, unordered] }, block: { $exists: false } });
    expect(missing).toBe(0);
    expect({ ordered: await seen(ordered), unordered: await seen(unordered) }).toEqual(before);
    await expectSameAsSorted(ordered, 260);
    expect(await migrateEventLayouts(deps, { passes: 1 })).toBe(0); // nothing left to move

    // Appends after the move go on in blocks; a time that goes back is still caught.
    const later = sample('MessageEvent', { timestamp: at(200) });
    expect((await t.ingest(ordered, legacy.sessionKey, [later])).status).toBe(200);
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: true, ordered: true, lastSeq: 261 });
    expect((await seen(ordered)).asc).toEqual([...before.ordered.asc, later.id]);
    expect((await t.ingest(ordered, legacy.sessionKey, [sample('MessageEvent', { timestamp: at(100) })])).status).toBe(
      200,
    );
    expect(await conversations.layout(ordered)).toMatchObject({ blocks: true, ordered: false, lastSeq: 262 });
  });

  it('a log stored before with a hole in its seqs stays on the sorted reads, and reads the same', async () => {
    const legacy = await legacyConversation(Array.from({ length: 150 }, (_, i) => at(i)));
    await t.database.db.collection('events').deleteOne({ conversation_id: legacy.conversationId, seq: 77 } as never);
    const before = await seen(legacy.conversationId);
    const deps = { conversations, events, log: pino({ level: 'silent' }) };
    expect(await migrateConversationLayout(deps, legacy.conversationId)).toBe(true);
    expect(await conversations.layout(legacy.conversationId)).toMatchObject({ blocks: false });
    expect(await seen(legacy.conversationId)).toEqual(before);
    expect(await conversations.withoutBlocks(10_000)).not.toContain(legacy.conversationId);
  });

  it('a conversation whose batch is being stored is left for a later pass, then moved', async () => {
    const id = (await legacyConversation(Array.from({ length: 30 }, (_, i) => at(i)))).conversationId;
    const token = await conversations.acquireIngestLease(id, 60_000, 1000);
    expect(token).not.toBeNull();
    const deps = { conversations, events, log: pino({ level: 'silent' }) };
    expect(await migrateConversationLayout(deps, id)).toBe(false);
    expect(await conversations.layout(id)).toMatchObject({ blocks: false });
    await conversations.releaseIngestLease(id, token!);
    expect(await migrateConversationLayout(deps, id)).toBe(true);
    expect(await conversations.layout(id)).toMatchObject({ blocks: true, ordered: true, lastSeq: 30 });
  });
});
