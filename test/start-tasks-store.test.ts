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

  const change = (status: StartTaskStatus) => ({ status, detail: null, app_conversation_id: null, sandbox_id: null, agent_server_url: null });

  it('keeps each step of the history once, in order, even when a write is repeated; a second create is refused', async () => {
    const id = uniqueName('task');
    const task = { id, created_by_user_id: 'u1', conversation_id: id, ...change('WORKING'), request: { trigger: 'platform_api' } };
    expect(await store.create(task, 'sealed')).toBe(true);
    expect(await store.create(task, 'sealed')).toBe(false);
    await store.record(id, 0, change('WORKING'));
    await store.record(id, 0, change('WORKING')); // the retry of a write whose answer was lost
    await store.record(id, 1, change('WAITING_FOR_SANDBOX'));
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
    expect((await store.withHistory(id))!.history.map((h) => h?.status ?? null)).toEqual(['WORKING', null, 'PREPARING_REPOSITORY']);
    expect(await store.clearHistoryIfUnchanged(id, new Date(0))).toBe(false);
    expect(await store.clearHistoryIfUnchanged(id, moved!.updated_at)).toBe(true);
    expect((await store.withHistory(id))!.history).toEqual([]);
  });
});
