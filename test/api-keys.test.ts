/** API keys: stored only as hashes, shown once, paged, revocable, scoped to their owner. */
import { createHash } from 'node:crypto';
import { startTestApi, type TestApi } from './helpers/api';

describe('API keys', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi();
  });
  afterAll(() => t.close());

  it('stores no raw key anywhere, only its SHA-256', async () => {
    const { key } = await t.newUser();
    const created = await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'ci bot' } });
    expect(created.status).toBe(201);
    const raw: string = created.body.key;
    expect(raw).toMatch(/^acp_[A-Za-z0-9_-]{43}$/);
    const all = await t.database.db.collection('api_keys').find({}).toArray();
    const dump = JSON.stringify(all);
    for (const k of [key, raw]) {
      expect(dump).not.toContain(k);
      expect(dump).not.toContain(k.slice(12));
    }
    const doc = all.find((d) => d._id === created.body.id)!;
    expect(doc.key_hash).toBe(createHash('sha256').update(raw).digest('hex'));
    const me = await t.request('GET', '/api/v1/users/me', { key: raw });
    expect(me.status).toBe(200);
  });

  it('lists keys page by page without the key or its hash, never repeating one', async () => {
    const { key, userId } = await t.newUser();
    for (let i = 0; i < 4; i++) await t.apiKeys.create(userId, `k${i}`);
    const seen: string[] = [];
    let pageId: string | null = null;
    do {
      const r: { status: number; body: any } = await t.request(
        'GET',
        `/api/v1/api-keys/search?limit=2${pageId ? `&page_id=${pageId}` : ''}`,
        { key },
      );
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(2);
      for (const item of r.body.items) {
        expect(Object.keys(item).sort()).toEqual(['created_at', 'id', 'name', 'prefix', 'revoked_at']);
        seen.push(item.name);
      }
      pageId = r.body.next_page_id;
    } while (pageId);
    // Oldest first; keys made in the same millisecond may come in either order, but each exactly once.
    expect([...seen].sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'test']);
  });

  it('a revoked key stops working; another user cannot revoke it', async () => {
    const a = await t.newUser();
    const b = await t.newUser();
    const created = await t.request('POST', '/api/v1/api-keys', { key: a.key, body: { name: 'temp' } });
    const byOther = await t.request('DELETE', `/api/v1/api-keys/${created.body.id}`, { key: b.key });
    expect(byOther.status).toBe(404);
    expect(byOther.body).toEqual({ detail: 'API key not found' });
    expect((await t.request('GET', '/api/v1/users/me', { key: created.body.key })).status).toBe(200);

    const revoked = await t.request('DELETE', `/api/v1/api-keys/${created.body.id}`, { key: a.key });
    expect(revoked.status).toBe(204);
    const after = await t.request('GET', '/api/v1/users/me', { key: created.body.key });
    expect(after.status).toBe(401);
    expect((await t.request('DELETE', `/api/v1/api-keys/${created.body.id}`, { key: a.key })).status).toBe(404);
  });
});
