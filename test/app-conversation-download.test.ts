/**
 * GET /api/v1/app-conversations/{conversation_id}/download: the zip holds meta.json and every event as
 * stored, in append order; ownership before any read; a reader that goes away stops the reads. The zip
 * writer is also driven directly, past yazl's 65,535-entry limit of the plain zip format.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { conversationZip, eventEntryName, type ExportedEvent } from '../src/app-conversations/conversation-export';
import { startTestApi, type TestApi } from './helpers/api';
import { messages, sample } from './helpers/event-samples';
import { publishedClient } from './helpers/published-client';
import { unzip } from './helpers/zip';
import { setTimeout as sleep } from 'node:timers/promises';

const readAll = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

describe('conversation download', () => {
  let t: TestApi;
  let key: string;
  let otherKey: string;
  let conversationId: string;
  let empty: string;
  const base = Date.parse('2024-05-01T12:00:00Z');
  /** `k` '' sends no key. */
  const download = (id: string, k = key) =>
    fetch(`${t.url}/api/v1/app-conversations/${id}/download`, { headers: k ? { 'X-Access-Token': k } : {} });

  /** The app conversation record a start would have made, with the log's record beside it. */
  const newAppConversation = async (userId: string) => {
    const { conversationId: id, sessionKey } = await t.newConversation(userId);
    const at = new Date();
    await t.stores.appConversations.create({
      id,
      created_by_user_id: userId,
      sandbox_id: null,
      title: 'Export me',
      selected_repository: 'acme/widgets',
      selected_branch: 'main',
      git_provider: 'git_host_a',
      trigger: 'platform_api',
      agent_server_url: null,
      start_task_id: id,
      processors: [],
      created_at: at,
      updated_at: at,
    });
    return { id, sessionKey };
  };

  /** The log as the events search returns it, every page. */
  const searchAll = async (id: string) => {
    const items: any[] = [];
    let pageId: string | null = null;
    do {
      const r: { status: number; body: any } = await t.request(
        'GET',
        `/api/v1/conversation/${id}/events/search?limit=100${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      expect(r.status).toBe(200);
      items.push(...r.body.items);
      pageId = r.body.next_page_id;
    } while (pageId);
    return items;
  };

  beforeAll(async () => {
    t = await startTestApi();
    let userId: string;
    ({ userId, key } = await t.newUser());
    ({ key: otherKey } = await t.newUser());
    const c = await newAppConversation(userId);
    conversationId = c.id;
    // More events than one read of the export (500), in increasing time so seq and time orders agree;
    // one event of every other kind, and a large event (deflated in the zip; smaller ones are stored) with unicode.
    const evs = [
      ...messages(1150, base, 10),
      ...(
        ['PauseEvent', 'ObservationEvent', 'ActionEvent', 'ConversationStateUpdateEvent', 'AgentErrorEvent'] as const
      ).map((k, i) => sample(k, { timestamp: new Date(base + 20_000 + i).toISOString() })),
      sample('MessageEvent', {
        timestamp: new Date(base + 30_000).toISOString(),
        llm_message: {
          role: 'user',
          content: [
            {
              type: 'text',
              text: `ünïcödé ✓ "quoted" \\ back ${'and a long line, deflated in the zip; '.repeat(200)}`,
            },
          ],
        },
      }),
    ];
    for (let i = 0; i < evs.length; i += 200)
      expect((await t.ingest(conversationId, c.sessionKey, evs.slice(i, i + 200))).status).toBe(200);
    empty = (await newAppConversation(userId)).id;
  });
  afterAll(() => t.close());

  it('answers a zip of meta.json and every event as stored, in seq order, equal to what the events search returns', async () => {
    const r = await download(conversationId);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/zip');
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename="conversation_${conversationId}.zip"`);
    const entries = await unzip(Buffer.from(await r.arrayBuffer()));

    const [metaName, metaText] = entries[0]!;
    expect(metaName).toBe('meta.json');
    const [listed] = (await t.request('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
    // The conversation as listed, without the sandbox's live address and key (a zip is kept and shared).
    const { session_api_key: _key, conversation_url: _url, ...shareable } = listed;
    expect(JSON.parse(metaText)).toEqual(shareable);
    expect(metaText).not.toContain('session_api_key');
    expect(JSON.parse(metaText)).toMatchObject({
      id: conversationId,
      title: 'Export me',
      selected_repository: 'acme/widgets',
    });

    const events = entries.slice(1);
    const log = await searchAll(conversationId);
    expect(log).toHaveLength(1156);
    expect(events.map(([name]) => name)).toEqual(log.map((_, i) => eventEntryName(i + 1)));
    expect(events.map(([name]) => name)[0]).toBe('events/00000001.json');
    expect(events.map(([, text]) => JSON.parse(text))).toEqual(log);

    // Byte for byte the stored text.
    const stored = await t.database.db
      .collection('events')
      .find({ conversation_id: conversationId }, { projection: { _id: 0, seq: 1, json: 1 } })
      .sort({ seq: 1 })
      .toArray();
    expect(events.map(([, text]) => text)).toEqual(stored.map((d) => d.json));
    expect(events.at(-1)![1]).toContain('ünïcödé ✓');
  });

  it('a conversation without events: meta.json alone', async () => {
    const r = await download(empty);
    expect(r.status).toBe(200);
    const entries = await unzip(Buffer.from(await r.arrayBuffer()));
    expect(entries.map(([name]) => name)).toEqual(['meta.json']);
    expect(JSON.parse(entries[0]![1]).id).toBe(empty);
  });

  it("404 for an unknown conversation and for another user's, before any read of the log; 401 without a key", async () => {
    const foreign = await download(conversationId, otherKey);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ detail: 'Conversation not found' });
    const unknown = await download(randomUUID());
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: 'Conversation not found' });
    // The log's record alone (no app conversation) is not downloadable either.
    const bare = await t.newConversation((await t.newUser()).userId);
    expect((await download(bare.conversationId)).status).toBe(404);

    const anonymous = await download(conversationId, '');
    expect(anonymous.status).toBe(401);
    expect(typeof ((await anonymous.json()) as { detail: unknown }).detail).toBe('string');
    const badKey = await download(conversationId, 'not-a-key');
    expect(badKey.status).toBe(401);
  });

  it('422 for a conversation id that is not a UUID; a UUID in another spelling is the same conversation', async () => {
    for (const bad of ['bad%20id', 'not-a-uuid', '1234']) {
      const r = await download(bad);
      expect(r.status).toBe(422);
      expect(((await r.json()) as { detail: unknown[] }).detail[0]).toMatchObject({
        loc: ['path', 'conversation_id'],
        type: 'uuid_parsing',
      });
    }
    const upper = await download(conversationId.toUpperCase().replace(/-/g, ''));
    expect(upper.status).toBe(200);
    expect(upper.headers.get('content-disposition')).toBe(`attachment; filename="conversation_${conversationId}.zip"`);
    await upper.arrayBuffer();
  });

  it('a client generated from the published document downloads and decodes it', async () => {
    const client = publishedClient(t.url, key);
    const { data, error, response } = await client.GET('/api/v1/app-conversations/{conversation_id}/download', {
      params: { path: { conversation_id: conversationId } },
      parseAs: 'arrayBuffer',
    });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    const entries = await unzip(Buffer.from(data as ArrayBuffer));
    expect(entries).toHaveLength(1157);
    expect(JSON.parse(entries[1]![1]).id).toBe((await searchAll(conversationId))[0].id);

    const missing = await client.GET('/api/v1/app-conversations/{conversation_id}/download', {
      params: { path: { conversation_id: randomUUID() } },
      parseAs: 'arrayBuffer',
    });
    expect(missing.response.status).toBe(404);
  });

  it('a client that disconnects mid-download: the api stays well and serves the next download whole', async () => {
    const ac = new AbortController();
    const r = await fetch(`${t.url}/api/v1/app-conversations/${conversationId}/download`, {
      headers: { 'X-Access-Token': key },
      signal: ac.signal,
    });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    ac.abort();
    await expect(reader.read()).rejects.toThrow();
    const again = await download(conversationId);
    expect(again.status).toBe(200);
    expect(await unzip(Buffer.from(await again.arrayBuffer()))).toHaveLength(1157);
  });
});

describe('the conversation zip writer', () => {
  /** A log of `n` small events that counts what was read and whether its reader let it go. */
  const countingLog = (n: number) => {
    const state = { read: 0, finished: false };
    async function* events(): AsyncGenerator<ExportedEvent> {
      try {
        for (let seq = 1; seq <= n; seq++) {
          state.read++;
          yield {
            seq,
            json: JSON.stringify({ id: `e${seq}`, kind: 'PauseEvent', source: 'user', padding: 'x'.repeat(200) }),
          };
        }
      } finally {
        state.finished = true;
      }
    }
    return { state, events: events() };
  };

  it('a reader that goes away stops the reads of the log', async () => {
    const log = countingLog(50_000);
    const zip = conversationZip({ meta: { id: 'c' }, events: log.events });
    // Read a little, then stop reading for a while: the writer must wait, not read on.
    const firstChunk = await new Promise<Buffer>((resolve) => zip.once('data', resolve));
    expect(firstChunk.length).toBeGreaterThan(0);
    zip.pause();
    // The writer fills the stream's buffers (some 32 KiB), then waits: the count of reads settles.
    let readWhilePaused = -1;
    for (let i = 0; i < 100 && log.state.read !== readWhilePaused; i++) {
      readWhilePaused = log.state.read;
      await sleep(200);
    }
    expect(log.state.read).toBe(readWhilePaused);
    expect(readWhilePaused).toBeLessThan(1_000);
    await sleep(300);
    expect(log.state.read).toBe(readWhilePaused);
    expect(log.state.finished).toBe(false);
    // Waiting leaves no listener per entry behind (hundreds of entries went by): nothing piles up.
    expect(zip.listenerCount('close')).toBeLessThan(10);
    expect(zip.listenerCount('drain')).toBeLessThan(10);
    // The reader goes away: the log is let go (its `finally` ran) with nothing more read.
    zip.destroy();
    await sleep(100);
    expect(log.state.finished).toBe(true);
    expect(log.state.read).toBeLessThanOrEqual(readWhilePaused + 1);
  });

  it('writes a valid zip of more entries than the plain zip format counts (zip64), every entry in order', async () => {
    const n = 66_000;
    const log = countingLog(n);
    // Stored, not deflated (the events are small): the same writer, without 66k zlib streams' worth of waiting.
    const data = await readAll(conversationZip({ meta: { id: 'big' }, events: log.events }));
    const entries = await unzip(data);
    expect(entries).toHaveLength(n + 1);
    expect(entries[0]).toEqual(['meta.json', JSON.stringify({ id: 'big' }, null, 2)]);
    for (const i of [1, 2, 65_534, 65_535, 65_536, n]) {
      expect(entries[i]![0]).toBe(eventEntryName(i));
      expect(JSON.parse(entries[i]![1]).id).toBe(`e${i}`);
    }
    expect(log.state.finished).toBe(true);
  }, 180_000); // 11 s alone; five times that under the whole suite on 2 cores (a bound on a hang, not on speed)
});
