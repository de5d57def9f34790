/** The start tasks store against the real MongoDB-wire server: a retried status write is kept once. */
import { openDatabase, type Database } from '../src/store/mongo';
import type { StartTaskStatus } from '../src/schemas/app-conversations';
import { StartTasksStore } from '../src/store/start-tasks-store';
import { testEnv, uniqueName } from './helpers/env';

describe('start tasks store', () => {
  let database: Database;
  let store: StartTasksStore;
  beforeAll(() => {
    database = openDatabase(testEnv().mongoUri, uniqueName('test'));
    store = new StartTasksStore(database.db);
  });
  afterAll(async () => {
    await database.db.dropDatabase();
    await database.close();
  });

  const change = (status: StartTaskStatus) => ({
    status,
    detail: null,
    app_conversation_id: null,
    sandbox_id: null,
    agent_server_url: null,
  });

  it('keeps each step of the history once, in order, even when a write is repeated; a second create is refused', async () => {
    const id = uniqueName('task');
    const task = {
      id,
      created_by_user_id: 'u1',
      conversation_id: id,
      ...change('WORKING'),
      request: { trigger: 'platform_api' },
    };
    expect(await store.create(task, 'sealed')).toBe(true);
    expect(await store.create(task, 'sealed')).toBe(false);
    const first = await store.record(id, 0, change('WORKING'), new Date('2026-01-01T00:00:00Z'));
    // The retry of a write whose answer was lost, or the record step run again after its worker died: the
    // step keeps its first time, in the history and in the answer.
    const again = await store.record(id, 0, change('WORKING'), new Date('2026-01-01T00:00:09Z'));
    expect(again!.updated_at).toEqual(first!.updated_at);
    expect((await store.withHistory(id))!.history[0]!.at).toEqual(new Date('2026-01-01T00:00:00Z'));
    await store.record(id, 1, change('WAITING_FOR_SANDBOX'));
    // Step 0 run again after step 1 landed (both local steps of one workflow task the dead worker never
    // completed): the answer is step 0 as it was recorded, not the task's latest status.
    const replayed = await store.record(id, 0, change('WORKING'), new Date('2026-01-01T00:00:20Z'));
    expect(replayed).toMatchObject({ status: 'WORKING', updated_at: first!.updated_at });
    await store.record(id, 2, { ...change('READY'), sandbox_id: 'sb1' });
    const found = await store.withHistory(id);
    expect(found!.history.map((h) => h?.status)).toEqual(['WORKING', 'WAITING_FOR_SANDBOX', 'READY']);
    expect(found!.task).toMatchObject({ status: 'READY', sandbox_id: 'sb1' });
    expect(found!.task).not.toHaveProperty('secrets_sealed');
    expect(await store.sealedSecrets(id)).toBe('sealed');
  });

  it('a lost status write leaves a hole that reads back as null; a history is cleared only if the task did not move', async () => {
    const id = uniqueName('task');
    await store.create({ id, created_by_user_id: 'u1', conversation_id: id, ...change('WORKING'), request: {} }, null);
    await store.record(id, 0, change('WORKING'));
    const moved = await store.record(id, 2, change('PREPARING_REPOSITORY')); // step 1's write never landed
    expect((await store.withHistory(id))!.history.map((h) => h?.status ?? null)).toEqual([
      'WORKING',
      null,
      'PREPARING_REPOSITORY',
    ]);
    expect(await store.clearHistoryIfUnchanged(id, new Date(0))).toBe(false);
    expect(await store.clearHistoryIfUnchanged(id, moved!.updated_at)).toBe(true);
    expect((await store.withHistory(id))!.history).toEqual([]);
  });

  describe('search in each published sort order, a page at a time', () => {
    const owner = uniqueName('owner');
    const t0 = Date.parse('2024-05-01T12:00:00Z');
    /** [id, created second, updated second]: created and updated orders differ, with ties in both. */
    const plan: [string, number, number][] = [
      ['t-a', 0, 50],
      ['t-b', 1, 10],
      ['t-c', 1, 30],
      ['t-d', 2, 30],
      ['t-e', 3, 20],
      ['t-f', 4, 40],
      ['t-g', 4, 10],
    ];
    const expected = (field: 1 | 2, order: 'asc' | 'desc') => {
      const sorted = [...plan]
        .sort((x, y) => x[field] - y[field] || (x[0] < y[0] ? -1 : 1))
        .map((p) => `${owner}-${p[0]}`);
      return order === 'asc' ? sorted : sorted.reverse();
    };

    beforeAll(async () => {
      for (const [id, created, updated] of plan) {
        const full = `${owner}-${id}`;
        await store.create(
          { id: full, created_by_user_id: owner, conversation_id: full, ...change('WORKING'), request: {} },
          null,
          new Date(t0 + created * 1000),
        );
        await store.record(full, 0, change('WAITING_FOR_SANDBOX'), new Date(t0 + updated * 1000));
      }
      // Another user's task between them all: never seen.
      await store.create(
        {
          id: uniqueName('other'),
          created_by_user_id: 'someone-else',
          conversation_id: 'x',
          ...change('WORKING'),
          request: {},
        },
        null,
        new Date(t0 + 2500),
      );
    });

    const walk = async (field: 'created_at' | 'updated_at', order: 'asc' | 'desc', limit: number, filters = {}) => {
      const ids: string[] = [];
      let after: [number, string] | undefined;
      for (let pages = 0; pages < 20; pages++) {
        const page = await store.search(owner, filters, { field, order }, limit, after);
        expect(page.items.length).toBeLessThanOrEqual(limit);
        ids.push(...page.items.map((t) => t.id));
        if (!page.last) return ids;
        expect(page.last).toEqual([page.items.at(-1)![field].getTime(), page.items.at(-1)!.id]);
        after = page.last;
      }
      throw new Error('no end of pages');
    };

    it.each([
      ['created_at', 'asc', 1],
      ['created_at', 'desc', 1],
      ['updated_at', 'asc', 2],
      ['updated_at', 'desc', 2],
    ] as const)(
      '%s %s: every task once, in order, ties by id, whatever the page size',
      async (field, order, column) => {
        for (const limit of [1, 2, 3, 7, 100]) expect(await walk(field, order, limit)).toEqual(expected(column, order));
      },
    );

    it('the cursor keeps the created_at range of the filter', async () => {
      const range = { createdAtGte: new Date(t0 + 1000), createdAtLt: new Date(t0 + 4000) };
      const inRange = (ids: string[]) => ids.filter((id) => ['t-b', 't-c', 't-d', 't-e'].some((x) => id.endsWith(x)));
      expect(await walk('updated_at', 'desc', 2, range)).toEqual(inRange(expected(2, 'desc')));
      expect(await walk('created_at', 'asc', 1, range)).toEqual(inRange(expected(1, 'asc')));
    });

    it('the store declares an index by owner and last change', async () => {
      const { startTasksIndexes } = await import('../src/store/start-tasks-store');
      expect(startTasksIndexes.indexes.map((i) => i.key)).toContainEqual({
        created_by_user_id: 1,
        updated_at: -1,
        _id: -1,
      });
    });
  });
});
