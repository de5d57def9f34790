/** agent-control-admin, run as the built command against the real servers. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { openDatabase, type Database } from '../src/store/mongo';
import { createWorker } from '../worker/worker';
import { TEST_SECRETS_KEY, testConfig, testEnv, uniqueName } from './helpers/env';
import { quietTemporalRuntime } from './helpers/temporal-runtime';
import { distPath, runNode } from './helpers/run';

describe('admin CLI', () => {
  const env = testEnv();
  quietTemporalRuntime();
  const vars = {
    MONGODB_URI: env.mongoUri,
    TEMPORAL_ADDRESS: env.temporalAddress,
    MONGODB_DB: uniqueName('test'),
    TEMPORAL_TASK_QUEUE: uniqueName('tq'),
    LOG_LEVEL: 'silent',
  };
  const admin = (...args: string[]) => runNode(distPath('src', 'cli', 'admin.js'), ['--json', ...args], vars);
  let database: Database;
  beforeAll(() => {
    database = openDatabase(env.mongoUri, vars.MONGODB_DB);
  });
  afterAll(async () => {
    await database.db.dropDatabase();
    await database.close();
  });

  it('bootstrap creates the admin and a key once, then nothing', async () => {
    const first = await admin('bootstrap');
    expect(first.code).toBe(0);
    const created = JSON.parse(first.stdout);
    expect(created).toEqual({ userId: expect.any(String), key: expect.stringMatching(/^acp_/) });
    const second = await admin('bootstrap');
    expect(JSON.parse(second.stdout)).toEqual({});
    expect(await database.db.collection('users').countDocuments()).toBe(1);
  });

  it('creates users and keys, lists keys without them, revokes', async () => {
    const email = `${uniqueName('ops')}@example.com`;
    const user = JSON.parse((await admin('user', 'create', '--email', email)).stdout);
    expect(user).toEqual({ id: expect.any(String), email, personal_org_id: expect.any(String) });

    const dup = await admin('user', 'create', '--email', email);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('already exists');

    const made = await admin('key', 'create', '--user', email, '--name', 'deploy');
    const { id, key } = JSON.parse(made.stdout);
    expect(key).toMatch(/^acp_/);
    const stored = JSON.stringify(await database.db.collection('api_keys').find({}).toArray());
    expect(stored).not.toContain(key);

    const listed = await admin('key', 'list', '--user', user.id);
    expect(listed.stdout).not.toContain(key);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id, name: 'deploy', revoked_at: null })]);

    expect((await admin('key', 'revoke', id)).code).toBe(0);
    const again = await admin('key', 'revoke', id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no live API key ${id}`);
  });

  it('administers organizations and members, and stores a user secret from standard input', async () => {
    const ownerEmail = `${uniqueName('owner')}@example.com`;
    const owner = JSON.parse((await admin('user', 'create', '--email', ownerEmail)).stdout);
    expect(owner.personal_org_id).toEqual(expect.any(String));
    const other = JSON.parse((await admin('user', 'create', '--email', `${uniqueName('dev')}@example.com`)).stdout);
    const org = JSON.parse((await admin('org', 'create', '--name', 'Platform team', '--owner', ownerEmail)).stdout);
    expect((await admin('org', 'add-member', '--org', org.id, '--user', other.id, '--role', 'admin')).code).toBe(0);
    const members = JSON.parse((await admin('org', 'members', '--org', org.id)).stdout);
    expect(members).toEqual(
      expect.arrayContaining([
        { organization_id: org.id, user_id: owner.id, role: 'owner' },
        { organization_id: org.id, user_id: other.id, role: 'admin' },
      ]),
    );
    const badRole = await admin('org', 'add-member', '--org', org.id, '--user', other.id, '--role', 'king');
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('--role must be one of owner, admin, member');
    expect((await admin('org', 'remove-member', '--org', org.id, '--user', other.id)).code).toBe(0);
    expect(JSON.parse((await admin('org', 'members', '--org', org.id)).stdout)).toHaveLength(1);

    const stored = await runNode(
      distPath('src', 'cli', 'admin.js'),
      ['--json', 'secret', 'set', '--user', ownerEmail, '--name', 'GITHUB_TOKEN'],
      { ...vars, SECRETS_KEY: TEST_SECRETS_KEY },
      60_000,
      'ghp_from_stdin\n',
    );
    expect(stored.code).toBe(0);
    const doc = await database.db.collection('user_secrets').findOne({ user_id: owner.id });
    expect(doc).toMatchObject({ name: 'GITHUB_TOKEN', value: expect.stringMatching(/^enc:v1:/) });
    expect(JSON.stringify(doc)).not.toContain('ghp_from_stdin');
  });

  it("shows an organization's quotas and sets its own over the defaults, refusing a bad value or an unknown organization", async () => {
    const ownerEmail = `${uniqueName('lead')}@example.com`;
    expect((await admin('user', 'create', '--email', ownerEmail)).code).toBe(0);
    const org = JSON.parse((await admin('org', 'create', '--name', 'Quota team', '--owner', ownerEmail)).stdout);
    const quotas = async (...args: string[]) => {
      const r = await runNode(
        distPath('src', 'cli', 'admin.js'),
        ['--json', 'org', 'quotas', '--org', org.id, ...args],
        { ...vars, ORG_MAX_RUNNING_SANDBOXES: '20' },
      );
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout);
    };
    expect(await quotas()).toEqual({
      organization_id: org.id,
      running_sandboxes: { max: 20, named: 'ORG_MAX_RUNNING_SANDBOXES=20' },
      concurrent_starts: { max: null, named: 'ORG_MAX_CONCURRENT_STARTS=0' },
    });
    expect(await quotas('--running-sandboxes', '3', '--concurrent-starts', '2')).toMatchObject({
      running_sandboxes: { max: 3, named: 'its own quota: 3' },
      concurrent_starts: { max: 2, named: 'its own quota: 2' },
    });
    // One at a time: the other stays; `default` gives the configuration's back; 0 is no limit.
    expect(await quotas('--running-sandboxes', 'default')).toMatchObject({
      running_sandboxes: { max: 20 },
      concurrent_starts: { max: 2 },
    });
    expect(await quotas('--concurrent-starts', '0')).toMatchObject({
      concurrent_starts: { max: null, named: 'its own quota: 0' },
    });
    expect(await database.db.collection('organization_quotas').findOne({ _id: org.id })).toMatchObject({
      running_sandboxes: null,
      concurrent_starts: 0,
    });

    const bad = await admin('org', 'quotas', '--org', org.id, '--running-sandboxes', '-1');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--running-sandboxes must be a whole number >= 0 (0: no limit) or "default"');
    const unknown = await admin('org', 'quotas', '--org', 'no-such-org', '--running-sandboxes', '1');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no organization no-such-org');
    expect(await database.db.collection('organization_quotas').countDocuments({ _id: 'no-such-org' as never })).toBe(0);
  });

  it('explains a bad command and a bad environment', async () => {
    const bad = await admin('user', 'create', '--email', 'nope');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('is not an email address');
    const cfg = await runNode(distPath('src', 'cli', 'admin.js'), ['bootstrap'], { ...vars, MONGODB_URI: 'localhost' });
    expect(cfg.code).toBe(1);
    expect(cfg.stderr).toContain('MONGODB_URI=<redacted> is invalid');
  });

  it('refuses a --timeout outside 1 s to a day before doing anything', async () => {
    for (const [command, timeout] of [
      ['doctor', 'soon'],
      ['doctor', '0'],
      ['doctor', '1e9'],
      ['demo', 'NaN'],
    ]) {
      const r = await admin(command!, '--timeout', timeout!);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(`--timeout wants a number of seconds from 1 to 86400, not ${timeout}`);
    }
  });

  it('doctor: ok with a worker polling, a clear failure without one', async () => {
    const none = await admin('doctor', '--timeout', '2');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(
      `no worker finished the diagnostics workflow on task queue ${vars.TEMPORAL_TASK_QUEUE}`,
    );

    const connection = await NativeConnection.connect({ address: env.temporalAddress });
    const worker = await createWorker({
      connection,
      client: new Client({ connection: Connection.lazy({ address: env.temporalAddress }), namespace: env.namespace }),
      namespace: env.namespace,
      taskQueue: vars.TEMPORAL_TASK_QUEUE,
      db: database.db,
      workflowBundlePath: env.workflowBundlePath,
      config: testConfig(),
      secretsKey: TEST_SECRETS_KEY,
      identity: 'doctor-test-worker',
    });
    try {
      const ok = await worker.runUntil(admin('doctor'));
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout)).toEqual({
        worker: { identity: 'doctor-test-worker', taskQueue: vars.TEMPORAL_TASK_QUEUE },
        database: { ok: true, latencyMs: expect.any(Number) },
      });
    } finally {
      await connection.close();
    }
  });
});
