/** Organizations, memberships, settings and the switch endpoint (SPEC 2.6, 4.3), on the real database. */
import { randomUUID } from 'node:crypto';
import type { StartSettingsResolver } from '../src/orgs/start-settings';
import { SECRET_MASK } from '../src/schemas/organizations';
import type { MembershipsStore } from '../src/store/memberships-store';
import { startTestApi, type TestApi } from './helpers/api';

const SPEC_FIELDS = [
  'id',
  'name',
  'contact_name',
  'contact_email',
  'conversation_expiration',
  'remote_runtime_resource_factor',
  'billing_margin',
  'enable_proactive_conversation_starters',
  'sandbox_base_container_image',
  'sandbox_runtime_container_image',
  'org_version',
  'agent_settings',
  'conversation_settings',
  'search_api_key',
  'sandbox_api_key',
  'max_budget_per_task',
  'v1_enabled',
  'credits',
  'is_personal',
].sort();

describe('organizations', () => {
  let t: TestApi;
  let resolver: StartSettingsResolver;
  let memberships: MembershipsStore;
  beforeAll(async () => {
    t = await startTestApi();
    memberships = t.stores.memberships;
    resolver = t.services.startSettings;
  });
  afterAll(() => t.close());

  /** A user, a shared organization they own, and its id. */
  const team = async () => {
    const owner = await t.newUser();
    const org = await t.orgs.createOrganization(`team-${randomUUID().slice(0, 6)}`, owner.userId);
    return { owner, orgId: org.id };
  };

  describe('POST /api/organizations/{org_id}/switch', () => {
    it('422 when org_id is not a UUID', async () => {
      const { key } = await t.newUser();
      const r = await t.request('POST', '/api/organizations/not-a-uuid/switch', { key });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        expect.objectContaining({ loc: ['path', 'org_id'], type: 'uuid_parsing', input: 'not-a-uuid' }),
      ]);
    });

    it('404 when the organization does not exist', async () => {
      const { key } = await t.newUser();
      const r = await t.request('POST', `/api/organizations/${randomUUID()}/switch`, { key });
      expect(r).toMatchObject({ status: 404, body: { detail: 'Organization not found' } });
    });

    it('403 when the caller is not a member', async () => {
      const { orgId } = await team();
      const stranger = await t.newUser();
      const r = await t.request('POST', `/api/organizations/${orgId}/switch`, { key: stranger.key });
      expect(r).toMatchObject({ status: 403, body: { detail: 'You are not a member of this organization' } });
      expect((await t.users.get(stranger.userId))!.current_org_id).not.toBe(orgId);
    });

    it('200 with the Organization of SPEC 2.6, secrets masked; the active organization changes', async () => {
      const { owner, orgId } = await team();
      await t.orgs.update(orgId, owner.userId, {
        search_api_key: 'search-secret',
        agent_settings: { llm: { api_key: 'sk-team', model: 'gpt-x' } },
      });
      const before = await resolver.resolve(owner.userId);
      const r = await t.request('POST', `/api/organizations/${orgId}/switch`, { key: owner.key });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(SPEC_FIELDS);
      expect(r.body).toMatchObject({ id: orgId, is_personal: false, search_api_key: SECRET_MASK, sandbox_api_key: '' });
      expect(r.body.agent_settings.llm).toMatchObject({ api_key: SECRET_MASK, model: 'gpt-x' });
      expect((await t.users.get(owner.userId))!.current_org_id).toBe(orgId);
      const after = await resolver.resolve(owner.userId);
      expect(before.organization_id).not.toBe(orgId);
      expect(after.organization_id).toBe(orgId);
      expect(after.agent_settings).toMatchObject({
        agent_kind: 'platform',
        llm: { api_key: 'sk-team', model: 'gpt-x' },
      });
    });

    it('acts on the user behind the credential, whatever the request says', async () => {
      const { owner, orgId } = await team();
      const other = await t.newUser();
      await memberships.put(orgId, other.userId, 'member');
      const r = await t.request('POST', `/api/organizations/${orgId}/switch?user_id=${owner.userId}`, {
        key: other.key,
        body: { user_id: owner.userId },
      });
      expect(r.status).toBe(200);
      expect((await t.users.get(other.userId))!.current_org_id).toBe(orgId);
      expect((await t.users.get(owner.userId))!.current_org_id).not.toBe(orgId);
    });

    // A member whose user record is gone: a broken invariant, answered as any internal error (the
    // domain names no HTTP status; the api logs the cause).
    it('500 {detail} when the switch cannot be written', async () => {
      const { orgId } = await team();
      const ghost = await t.newUser();
      await memberships.put(orgId, ghost.userId, 'member');
      await t.database.db.collection('users').deleteOne({ _id: ghost.userId as never });
      const r = await t.request('POST', `/api/organizations/${orgId}/switch`, { key: ghost.key });
      expect(r).toEqual(expect.objectContaining({ status: 500, body: { detail: 'Internal Server Error' } }));
    });
  });

  it('every user has a personal organization they own', async () => {
    const { key, userId } = await t.newUser();
    const me = await t.request('GET', '/api/v1/users/me', { key });
    const org = await t.request('GET', `/api/organizations/${me.body.current_org_id}`, { key });
    expect(org.body).toMatchObject({ is_personal: true, org_version: 1, conversation_settings: { schema_version: 1 } });
    expect(await memberships.role(me.body.current_org_id, userId)).toBe('owner');
  });

  it("GET /api/organizations lists the caller's organizations page by page", async () => {
    const { owner } = await team();
    await t.orgs.createOrganization('second', owner.userId);
    const seen: string[] = [];
    let pageId: string | null = null;
    do {
      const r: { body: any } = await t.request(
        'GET',
        `/api/organizations?limit=1${pageId ? `&page_id=${pageId}` : ''}`,
        { key: owner.key },
      );
      seen.push(...r.body.items.map((o: { id: string }) => o.id));
      pageId = r.body.next_page_id;
    } while (pageId);
    expect(seen).toHaveLength(3); // personal, team, second
    expect(new Set(seen).size).toBe(3);
  });

  describe('PATCH', () => {
    it('owners and admins change it, members read it, strangers get 403; org_version goes up', async () => {
      const { owner, orgId } = await team();
      const admin = await t.newUser();
      const member = await t.newUser();
      await memberships.put(orgId, admin.userId, 'admin');
      await memberships.put(orgId, member.userId, 'member');
      const byAdmin = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: admin.key,
        body: { name: 'renamed', conversation_settings: { max_iterations: 50 } },
      });
      expect(byAdmin.status).toBe(200);
      expect(byAdmin.body).toMatchObject({
        name: 'renamed',
        org_version: 2,
        conversation_settings: { max_iterations: 50, confirmation_mode: false },
      });
      const byOwner = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { conversation_settings: { confirmation_mode: true } },
      });
      expect(byOwner.body).toMatchObject({
        org_version: 3,
        conversation_settings: { max_iterations: 50, confirmation_mode: true },
      });
      const byMember = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: member.key,
        body: { name: 'nope' },
      });
      expect(byMember).toMatchObject({
        status: 403,
        body: { detail: 'Only owners and admins can change an organization' },
      });
      expect((await t.request('GET', `/api/organizations/${orgId}`, { key: member.key })).body.name).toBe('renamed');
      const stranger = await t.newUser();
      expect((await t.request('GET', `/api/organizations/${orgId}`, { key: stranger.key })).status).toBe(403);
      expect((await t.request('GET', `/api/organizations/${randomUUID()}`, { key: owner.key })).status).toBe(404);
    });

    it('validates the merged settings: bounds, closed objects, the agent_kind variants', async () => {
      const { owner, orgId } = await team();
      const hot = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: { llm: { temperature: 3 } } },
      });
      expect(hot.status).toBe(422);
      expect(hot.body.detail).toEqual([
        expect.objectContaining({
          loc: ['body', 'agent_settings', 'llm', 'temperature'],
          type: 'less_than_equal',
          ctx: { le: 2 },
        }),
      ]);
      const extra = await t.request('PATCH', `/api/organizations/${orgId}`, { key: owner.key, body: { credits: 1e9 } });
      expect(extra.status).toBe(422);
      expect(extra.body.detail[0]).toMatchObject({ loc: ['body', 'credits'], type: 'extra_forbidden' });
      const acp = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: { agent_kind: 'acp', acp_command: ['agent', '--stdio'] } },
      });
      expect(acp.status).toBe(200);
      expect(acp.body.agent_settings).toEqual({
        schema_version: 1,
        agent_kind: 'acp',
        acp_command: ['agent', '--stdio'],
        acp_env: {},
      });
      const unknownKind = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: { agent_kind: 'magic' } },
      });
      expect(unknownKind.body.detail[0]).toMatchObject({ loc: ['body', 'agent_settings'], type: 'union_tag_invalid' });
      // Fields of two variants in one diff: no variant takes it, whatever is stored (422, as the document says).
      const mixed = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: { agent_kind: 'acp', tool_concurrency_limit: 2 } },
      });
      expect(mixed.status).toBe(422);
      // A diff of the platform variant, valid by itself, over the stored acp settings: a conflict with them.
      const unfit = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: { tool_concurrency_limit: 2 } },
      });
      expect(unfit.status).toBe(409);
      expect(unfit.body.detail).toMatch(
        /^The change does not fit the organization's stored settings: agent_settings\.tool_concurrency_limit: .*name its agent_kind\.$/,
      );
      expect((await t.orgs.get(orgId, owner.userId)).org_version).toBe(2);
    });
  });

  describe('secrets', () => {
    it('are encrypted at rest and masked on every path; the mask sent back keeps the stored value', async () => {
      const { owner, orgId } = await team();
      const secrets = { api_key: 'sk-live-123456', cloud_secret_access_key: 'aws-secret-xyz' };
      const set = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: {
          sandbox_api_key: 'sandbox-key-789',
          agent_settings: { llm: secrets, verification: { critic_api_key: 'critic-key-000' } },
        },
      });
      expect(set.status).toBe(200);
      const everyPath = [
        set.body,
        (await t.request('GET', `/api/organizations/${orgId}`, { key: owner.key })).body,
        (await t.request('GET', '/api/organizations?limit=100', { key: owner.key })).body.items.find(
          (o: { id: string }) => o.id === orgId,
        ),
        (await t.request('POST', `/api/organizations/${orgId}/switch`, { key: owner.key })).body,
      ];
      for (const body of everyPath) {
        const text = JSON.stringify(body);
        for (const raw of ['sk-live-123456', 'aws-secret-xyz', 'sandbox-key-789', 'critic-key-000'])
          expect(text).not.toContain(raw);
        expect(body.sandbox_api_key).toBe(SECRET_MASK);
        expect(body.agent_settings.llm).toMatchObject({ api_key: SECRET_MASK, cloud_secret_access_key: SECRET_MASK });
        expect(body.agent_settings.verification.critic_api_key).toBe(SECRET_MASK);
      }
      const stored = JSON.stringify(await t.database.db.collection('organizations').findOne({ _id: orgId as never }));
      for (const raw of ['sk-live-123456', 'aws-secret-xyz', 'sandbox-key-789', 'critic-key-000'])
        expect(stored).not.toContain(raw);
      expect(stored).toContain('enc:v1:');

      // Round trip: what a client read (masks included) written back changes nothing secret.
      const roundTrip = await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: set.body.agent_settings, sandbox_api_key: SECRET_MASK },
      });
      expect(roundTrip.status).toBe(200);
      const resolved = await resolver.resolve(owner.userId);
      expect(resolved.agent_settings).toMatchObject({
        llm: { api_key: 'sk-live-123456', cloud_secret_access_key: 'aws-secret-xyz' },
      });

      // A new value replaces; an empty one clears.
      await t.request('PATCH', `/api/organizations/${orgId}`, {
        key: owner.key,
        body: { agent_settings: { llm: { api_key: 'sk-new', cloud_secret_access_key: '' } } },
      });
      const after = await resolver.resolve(owner.userId);
      expect(after.agent_settings).toMatchObject({ llm: { api_key: 'sk-new', cloud_secret_access_key: '' } });
    });

    it("a start gets the user's stored secrets, the request's winning on equal names", async () => {
      const { userId } = await t.newUser();
      const store = t.stores.userSecrets;
      await store.set(userId, 'GITHUB_TOKEN', 'ghp_stored');
      await store.set(userId, 'NPM_TOKEN', 'npm_stored');
      const r = await resolver.resolve(userId, { GITHUB_TOKEN: 'ghp_request', EXTRA: 'x' });
      expect(r.secrets).toEqual({ GITHUB_TOKEN: 'ghp_request', NPM_TOKEN: 'npm_stored', EXTRA: 'x' });
      const raw = JSON.stringify(await t.database.db.collection('user_secrets').find({ user_id: userId }).toArray());
      expect(raw).not.toContain('ghp_stored');
    });
  });
});
