/**
 * A listed spec that no worker of the installation can run (the OpenHands agent server's, on a worker
 * without one) is refused when a sandbox of it is asked for: 409 with the worker's reason, nothing
 * stored; a spec the worker can run is still made. Real api, worker, Temporal and database.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

describe('a spec no worker can run', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let user: { userId: string; key: string };
  let emptyDir: string;

  beforeAll(async () => {
    service = await startServiceUnderTest('unrunnable-spec-', (dataDir) => {
      emptyDir = path.join(dataDir, 'no-agent-server');
      fs.mkdirSync(emptyDir);
      return { OPENHANDS_AGENT_SERVER_DIR: emptyDir };
    });
    t = service.t;
    user = await t.newUser();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('is refused at create with 409 and the reason, and nothing is stored', async () => {
    // The worker says what its host cannot run as it starts; the api takes it from then on.
    const refused = await eventually(
      async () => {
        const r = await t.request('POST', '/api/v1/sandboxes', {
          key: user.key,
          body: { sandbox_spec_id: 'local-process-openhands' },
        });
        expect(r.status).toBe(409);
        return r;
      },
      { what: 'the refusal once the worker reported', timeoutMs: 15_000 },
    );
    expect(refused.body.detail).toBe(
      'No worker of this installation can run sandbox spec local-process-openhands: it runs the OpenHands agent server, ' +
        'which this worker does not have installed (its operator sets OPENHANDS_AGENT_SERVER_DIR, or lets `npm start` install it)',
    );
    // Nothing of the host's layout reaches a tenant.
    expect(refused.body.detail).not.toContain(emptyDir);
    const listed = await t.request('GET', '/api/v1/sandboxes/search', { key: user.key });
    expect(listed.body.items).toEqual([]);
    // What the worker can run is made as ever.
    const made = await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} });
    expect(made.status).toBe(200);
    expect(made.body.sandbox_spec_id).toBe('local-process');
  });
});
