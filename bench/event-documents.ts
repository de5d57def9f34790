/**
 * The events bench's documents: events as a runtime reports them, the documents the api stores for them,
 * and a page of those documents read raw by blocks (the floor of the api's page).
 */
import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import { normalizeEventTime } from '../src/schemas/event-time';
import { EventSchema } from '../src/schemas/events';
import { eventKey, type StoredEvent } from '../src/store/events-collection';
import { blockKey, blockOf, firstSeqOf, lastSeqOf } from '../src/store/event-blocks';

/** Events as a runtime reports them: one ActionEvent in ten, the others messages of about 200 bytes. */
export function makeEvents(n: number, start: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => ({
    id: randomUUID(),
    kind: i % 10 === 0 ? 'ActionEvent' : 'MessageEvent',
    timestamp: new Date(start + i).toISOString(),
    ...(i % 10 === 0
      ? {
          thought: [{ text: 'run the tests' }],
          tool_name: 'terminal',
          tool_call_id: `call_${i}`,
          tool_call: { id: `call_${i}`, name: 'terminal', arguments: '{"command":"npm test"}' },
          llm_response_id: `resp_${i}`,
          action: { kind: 'TerminalAction', command: 'npm test' },
        }
      : {
          source: i % 2 ? 'agent' : 'user',
          llm_message: { role: 'assistant', content: [{ type: 'text', text: `message number ${i} `.repeat(8) }] },
        }),
  }));
}

/**
 * A page read raw the way the block layout allows (src/store/event-blocks.ts): the blocks from the seq
 * after `afterSeq`, one equality query each, sorted by seq, until `limit` + 1 documents (the one more
 * tells whether a next page exists) or a block that is not full. The floor of the api's page.
 */
export async function rawBlockPage(
  events: Collection<StoredEvent>,
  conversationId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredEvent[]> {
  const docs: StoredEvent[] = [];
  for (let b = blockOf(afterSeq + 1); docs.length <= limit; b++) {
    const from = Math.max(afterSeq + 1, firstSeqOf(b));
    const got = await events
      .find(
        { block: blockKey(conversationId, b), seq: { $gte: from } },
        { projection: { _id: 0, timestamp: 1, seq: 1, json: 1 } },
      )
      .sort({ seq: 1 })
      .limit(limit + 1 - docs.length)
      .toArray();
    docs.push(...got);
    if (got.length === 0 || got[got.length - 1]!.seq !== lastSeqOf(b)) break;
  }
  return docs;
}

/** The documents the api stores for these events, as the conversation's events 1, 2, 3, ... */
export function toStoredEvents(conversationId: string, events: readonly Record<string, unknown>[]): StoredEvent[] {
  return events.map((e, i) => {
    const v = EventSchema.parse(e);
    return {
      _id: eventKey(conversationId, v.id),
      conversation_id: conversationId,
      id: v.id,
      kind: v.kind,
      source: v.source,
      timestamp: normalizeEventTime(v.timestamp)!,
      seq: i + 1,
      block: blockKey(conversationId, blockOf(i + 1)),
      json: JSON.stringify(v),
    };
  });
}
