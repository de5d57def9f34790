/** The sandbox record store against the real MongoDB-wire server: use never undoes a status write. */
import { openDatabase, type Database } from '../src/store/mongo';
import { SandboxesStore, type SandboxRecord } from '../src/store/sandboxes-store';
import { testEnv, uniqueName } from './helpers/env';

describe('sandboxes store', () => {
  let database: Database;
  let store: SandboxesStore;
  beforeAll(() => {
    database = openDatabase(testEnv().mongoUri, uniqueName('test'));
    store = new SandboxesStore(database.db);
  });
  afterAll(async () => {
    await database.db.dropDatabase();
    await database.close();
  });

  const record = (id: string): SandboxRecord => {
    const now = new Date();
    return {
      id,
      created_by_user_id: 'u1',
      sandbox_spec_id: 'local-process',
      spec: {
        id: 'local-process',
        provider: 'process',
        runtime: 'built-in',
        image: null,
        command: null,
        working_dir: null,
        initial_env: {},
        memory_mb: null,
        cpus: null,
        pids_limit: null,
        disk_mb: null,
      },
      status: 'STARTING',
      status_detail: null,
      session_key_sealed: 'sealed',
      session_key_hash: 'hash',
      exposed_urls: [],
      runtime: null,
      created_at: now,
      updated_at: now,
      last_used_at: now,
    };
  };

  it('status writes racing with touches (ingest traffic) are never undone', async () => {
    const r = record(uniqueName('sb'));
    await store.insert(r);
    for (let i = 0; i < 40; i++) {
      const status = i % 2 ? 'RUNNING' : 'ERROR';
      await Promise.all([
        store.touch(r.id),
        store.setStatus(r.id, status, `round ${i}`),
        store.touch(r.id),
        store.touch(r.id),
      ]);
      expect(await store.get(r.id)).toMatchObject({ status, status_detail: `round ${i}` });
    }
  });

  it('last use is the creation time until the first touch, then the latest touch', async () => {
    const r = record(uniqueName('sb'));
    await store.insert(r);
    expect((await store.lastUsedAt(r)).getTime()).toBe(r.last_used_at.getTime());
    const later = new Date(r.last_used_at.getTime() + 60_000);
    await Promise.all([store.touch(r.id, later), store.touch(r.id, later)]); // two first touches race to insert
    expect((await store.lastUsedAt(r)).getTime()).toBe(later.getTime());
  });
});
