/**
 * Process sandboxes that are not isolated (the service is not root and SANDBOX_PROCESS_ISOLATION is not
 * `none`) are for the users the operator lists in SANDBOX_PROCESS_USERS only; others get a 403 that
 * says why, and other providers stay open to everyone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateApiKey } from '../src/auth/api-key';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig, uniqueName } from './helpers/env';

describe('process sandboxes without isolation', () => {
  let t: TestApi;
  let dir: string;
  const allowedEmail = `${uniqueName('allowed')}@example.com`;
  const allowedId = `user-${generateApiKey().slice(4, 20)}`;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-'));
    const specs = path.join(dir, 'specs.json');
    fs.writeFileSync(specs, JSON.stringify([{ id: 'container', provider: 'docker', image: 'runtime:1' }]));
    const config = testConfig({
      DATA_DIR: dir,
      SANDBOX_SPECS_FILE: specs,
      SANDBOX_PROCESS_USERS: `${allowedEmail}, ${allowedId}`,
    });
    // What loadConfig chooses for a service that does not run as root and was not told `none`.
    config.sandboxes.processIsolation = 'restricted';
    expect(config.sandboxes.processUsers).toEqual([allowedEmail, allowedId]);
    t = await startTestApi(config);
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const userWith = async (email: string, id?: string) => {
    const user = id ? await t.users.create(email, null, id) : await t.orgs.createUser(email);
    return { userId: user.id, key: (await t.apiKeys.create(user.id, 'test')).raw };
  };

  it('refuses a process sandbox to a user not listed, with a detail naming the settings, and stores nothing', async () => {
    const other = await t.newUser();
    const r = await t.request('POST', '/api/v1/sandboxes', { key: other.key, body: {} });
    expect(r.status).toBe(403);
    expect(r.body.detail).toMatch(/not isolated .*SANDBOX_PROCESS_USERS.*SANDBOX_PROCESS_ISOLATION=none/);
    expect(await t.database.db.collection('sandboxes').countDocuments({ created_by_user_id: other.userId })).toBe(0);
    // Other providers are not concerned.
    const docker = await t.request('POST', '/api/v1/sandboxes', {
      key: other.key,
      body: { sandbox_spec_id: 'container' },
    });
    expect(docker.status).toBe(200);
  });

  it('lets the users listed by email or by id start them', async () => {
    for (const u of [await userWith(allowedEmail), await userWith(`${uniqueName('by-id')}@example.com`, allowedId)]) {
      const r = await t.request('POST', '/api/v1/sandboxes', { key: u.key, body: {} });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        created_by_user_id: u.userId,
        sandbox_spec_id: 'local-process',
        status: 'STARTING',
      });
    }
  });
});
