/**
 * The service of the sandboxes suites (test/sandboxes.test.ts, test/sandboxes-search.test.ts): the api
 * and a worker checking health every 250 ms with a grace period of 1 s, no idle pause and a short
 * workflow history, two users and a Temporal client; and sandboxes made through the api.
 */
import type { Client } from '@temporalio/client';
import type { TestApi } from './api';
import { runtimePid, waitForStatus } from './sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './service';

/** What the suite's beforeAll started. */
export interface SandboxesService {
  service: ServiceUnderTest;
  t: TestApi;
  dataDir: string;
  alice: { userId: string; key: string };
  bob: { userId: string; key: string };
  client: Client;
}

/**
 * Starts the service (its data directory named by `prefix`) in a beforeAll of the describe it is called
 * in, and closes it in its afterAll; `started()` is what it started, to read in a beforeAll of the
 * suite's own (registered after). `create` and `running` make a sandbox of alice's unless given a key.
 */
export function useSandboxesService(prefix: string) {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dataDir: string;
  let alice: { userId: string; key: string };
  let bob: { userId: string; key: string };
  let client: Client;

  beforeAll(async () => {
    service = await startServiceUnderTest(prefix, {
      SANDBOX_HEALTH_INTERVAL_MS: '250',
      SANDBOX_HEALTH_GRACE_MS: '1000',
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      SANDBOX_HISTORY_LIMIT: '120',
    });
    ({ t, dataDir } = service);
    alice = await t.newUser();
    bob = await t.newUser();
    client = await service.temporal();
  });

  afterAll(async () => {
    await service?.close();
  });

  const create = async (key = alice.key, body: unknown = {}) => {
    const r = await t.request('POST', '/api/v1/sandboxes', { key, body });
    expect(r.status).toBe(200);
    return r.body;
  };
  const running = async (key = alice.key) => {
    const s = await create(key);
    return waitForStatus(t, key, s.id, 'RUNNING');
  };
  const pidOf = (id: string) => runtimePid(t, id);

  return {
    started: (): SandboxesService => ({ service, t, dataDir, alice, bob, client }),
    create,
    running,
    pidOf,
  };
}
