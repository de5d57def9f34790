/**
 * A sandbox of a spec this worker cannot run as configured (the OpenHands agent server's spec, with
 * OPENHANDS_AGENT_SERVER_DIR naming a directory that holds no installed server), taken because another
 * worker host said it could run it: its start here ends ERROR saying why, and a resume is refused with a
 * 409 that says why again, never a 5xx (issue 51: schemathesis found the 502); neither says the host's
 * paths. (With this worker alone, the create itself is the 409: sandbox-specs-unrunnable.test.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestApi } from './helpers/api';
import { waitForSandbox } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

describe('a sandbox of a spec the worker cannot run', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let emptyDir: string;

  beforeAll(async () => {
    service = await startServiceUnderTest('sandboxes-unrunnable-', (dataDir) => {
      emptyDir = path.join(dataDir, 'no-agent-server');
      fs.mkdirSync(emptyDir);
      return { OPENHANDS_AGENT_SERVER_DIR: emptyDir, SANDBOX_IDLE_TIMEOUT_MS: '0' };
    });
    t = service.t;
  }, 60_000);
  afterAll(() => service?.close());

  it('ends ERROR saying why, and a resume is a 409 that says why, not a 502', async () => {
    const user = await t.newUser();
    // Another worker host, heard from just now, that can run every spec.
    await t.stores.workerHosts.report('another-host', []);
    const created = await t.request('POST', '/api/v1/sandboxes', {
      key: user.key,
      body: { sandbox_spec_id: 'local-process-openhands' },
    });
    expect(created.status).toBe(200);
    const failed = await waitForSandbox(t, user.key, created.body.id, (s) => s.status === 'ERROR');
    expect(failed.status_detail).toContain('which this worker does not have installed');
    expect(failed.status_detail).not.toContain(emptyDir);

    const resumed = await t.request('POST', `/api/v1/sandboxes/${created.body.id}/resume`, { key: user.key });
    expect({ status: resumed.status, detail: resumed.body.detail }).toEqual({
      status: 409,
      detail: expect.stringContaining('which this worker does not have installed'),
    });
    expect(resumed.body.detail).not.toContain(emptyDir);
    const [after] = (await t.request('GET', `/api/v1/sandboxes?id=${created.body.id}`, { key: user.key })).body;
    expect(after.status).toBe('ERROR');
  });
});
