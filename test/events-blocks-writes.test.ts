/**
 * The block layout of the event log (src/store/event-blocks.ts), written: a batch whose times go back
 * turns the log to sorted reads before it is stored, a resent batch leaves it ordered, a recorded end
 * behind the log is found from the blocks past it, and concurrent batches are numbered without a gap.
 */
import type { StoredEvent } from '../src/store/events-collection';
import { normalizeEventTime } from '../src/schemas/event-time';
import { at, base, conversations, eventsFrom, key, t, useEventBlocksApi, userId } from './helpers/event-blocks';
import { sample } from './helpers/event-samples';

describe('event log in blocks', () => {
  useEventBlocksApi();

  it('a batch whose times go back turns the log to sorted reads before it is stored, and pages stay in time order', async () => {
    const c = await t.newConversation(userId);
    const first = eventsFrom(150, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, first)).status).toBe(200);
    expect((await conversations.layout(c.conversationId))!.ordered).toBe(true);
    const late = sample('MessageEvent', { timestamp: at(3) }); // older than most of the log
    expect((await t.ingest(c.conversationId, c.sessionKey, [late, ...eventsFrom(10, base + 100_000)])).status).toBe(
      200,
    );
    expect(await conversations.layout(c.conversationId)).toMatchObject({ blocks: true, ordered: false, lastSeq: 161 });
    const r = await t.request('GET', `/api/v1/conversation/${c.conversationId}/events/search?limit=20`, { key });
    const times = r.body.items.map((e: { timestamp: string }) => Date.parse(e.timestamp));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(r.body.items.map((e: { id: string }) => e.id)).toContain(late.id);
    // Every page through the api, in time order: the log is read sorted from the batch on.
    const walked: { id: string; timestamp: string }[] = [];
    let pageId: string | null = null;
    do {
      const p: { body: any } = await t.request(
        'GET',
        `/api/v1/conversation/${c.conversationId}/events/search?limit=30${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      walked.push(...p.body.items);
      pageId = p.body.next_page_id;
    } while (pageId);
    expect(walked).toHaveLength(161);
    const walkedTimes = walked.map((e) => Date.parse(e.timestamp));
    expect([...walkedTimes].sort((a, b) => a - b)).toEqual(walkedTimes);
  });

  it('a resent batch, which goes back in time by nature, leaves the log ordered', async () => {
    const c = await t.newConversation(userId);
    const all = eventsFrom(120, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, all)).status).toBe(200);
    // The runtime's outbox resends after a restart: the last 20 again, then 5 new ones.
    const r = await t.ingest(c.conversationId, c.sessionKey, [...all.slice(100), ...eventsFrom(5, base + 1_000_000)]);
    expect(r).toMatchObject({ status: 200, body: { stored: 5, already_stored: 20 } });
    expect(await conversations.layout(c.conversationId)).toMatchObject({ blocks: true, ordered: true, lastSeq: 125 });
  });

  it('a recorded end behind the log (a writer died between its insert and its record) is found from the blocks past it', async () => {
    const c = await t.newConversation(userId);
    const first = eventsFrom(250, base);
    expect((await t.ingest(c.conversationId, c.sessionKey, first)).status).toBe(200);
    // As a writer that died after storing seqs 121-250 would leave it: the record says 120, and an older time.
    await t.database.db.collection('conversations').updateOne({ _id: c.conversationId } as never, {
      $set: { last_seq: 120, last_timestamp: normalizeEventTime(at(10)) },
    });
    // Later than the recorded time, earlier than the log's last: the log's order is off, and must be seen so.
    const back = sample('MessageEvent', { timestamp: at(50) });
    const r = await t.ingest(c.conversationId, c.sessionKey, [back, ...eventsFrom(4, base + 500_000)]);
    expect(r).toMatchObject({ status: 200, body: { stored: 5, already_stored: 0 } });
    const docs = await t.database.db
      .collection<StoredEvent>('events')
      .find({ conversation_id: c.conversationId })
      .sort({ seq: 1 })
      .toArray();
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 255 }, (_, i) => i + 1));
    expect(docs[250]!.id).toBe(back.id);
    expect(await conversations.layout(c.conversationId)).toMatchObject({ blocks: true, ordered: false, lastSeq: 255 });
  });

  it('concurrent batches of one conversation are stored whole, numbered without a gap or a repeat', async () => {
    const c = await t.newConversation(userId);
    const batches = Array.from({ length: 8 }, (_, b) => eventsFrom(30, base + b * 100_000));
    const answers = await Promise.all(batches.map((batch) => t.ingest(c.conversationId, c.sessionKey, batch)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const docs = await t.database.db
      .collection<StoredEvent>('events')
      .find({ conversation_id: c.conversationId })
      .sort({ seq: 1 })
      .toArray();
    expect(docs.map((d) => d.seq)).toEqual(Array.from({ length: 240 }, (_, i) => i + 1));
    expect(new Set(docs.map((d) => d.id)).size).toBe(240);
    // Each batch is contiguous in the log (one writer at a time), whichever order they came in.
    for (const batch of batches) {
      const seqs = batch.map((e) => docs.find((d) => d.id === e.id)!.seq);
      expect(seqs).toEqual(Array.from({ length: 30 }, (_, i) => seqs[0]! + i));
    }
    expect((await conversations.layout(c.conversationId))!.lastSeq).toBe(240);
  });
});
