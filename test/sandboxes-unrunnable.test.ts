/**
 * A sandbox of a spec this worker cannot run as configured (the OpenHands agent server's spec, with
 * OPENHANDS_AGENT_SERVER_DIR naming a directory that holds no installed server): its start ends ERROR
 * saying why, and a resume is refused with a 409 that says why again, never a 5xx (issue 51: schemathesis
 * found the 502).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestApi } from './helpers/api';
import { waitForSandbox } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

describe('a sandbox of a spec the worker cannot run', () => {
  let service: ServiceUnderTest;
  let t: TestApi;

  beforeAll(async () => {
    service = await startServiceUnderTest('sandboxes-unrunnable-', (dataDir) => {
      const empty = path.join(dataDir, 'no-agent-server');
      fs.mkdirSync(empty);
      return { OPENHANDS_AGENT_SERVER_DIR: empty, SANDBOX_IDLE_TIMEOUT_MS: '0' };
    });
    t = service.t;
  }, 60_000);
  afterAll(() => service?.close());

  it('ends ERROR saying why, and a resume is a 409 that says why, not a 502', async () => {
    const user = await t.newUser();
    const created = await t.request('POST', '/api/v1/sandboxes', {
      key: user.key,
      body: { sandbox_spec_id: 'local-process-openhands' },
    });
    expect(created.status).toBe(200);
    const failed = await waitForSandbox(t, user.key, created.body.id, (s) => s.status === 'ERROR');
    expect(failed.status_detail).toContain('holds no installed agent server');

    const resumed = await t.request('POST', `/api/v1/sandboxes/${created.body.id}/resume`, { key: user.key });
    expect({ status: resumed.status, detail: resumed.body.detail }).toEqual({
      status: 409,
      detail: expect.stringContaining('holds no installed agent server'),
    });
    const [after] = (await t.request('GET', `/api/v1/sandboxes?id=${created.body.id}`, { key: user.key })).body;
    expect(after.status).toBe('ERROR');
  });
});
