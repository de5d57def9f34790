/**
 * What one user may hold at once (USER_MAX_*): sandboxes starting or running, API keys, event sockets.
 * Past a quota the answer is a 429 (a socket: close 4429) that names the limit and what to do; nothing
 * is made; another user is not affected; freeing one makes room again.
 */
import { CLOSE_TOO_MANY } from '../src/http/event-socket-session';
import { messages } from './helpers/event-samples';
import { type TestApi } from './helpers/api';
import { waitForStatus } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { connect } from './helpers/ws-client';

describe('per-user quotas', () => {
  let t: TestApi;
  let service: ServiceUnderTest;

  beforeAll(async () => {
    service = await startServiceUnderTest('quotas-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      USER_MAX_RUNNING_SANDBOXES: '2',
      USER_MAX_API_KEYS: '3',
      USER_MAX_WEBSOCKETS: '2',
    });
    t = service.t;
  }, 60_000);

  afterAll(async () => {
    await service?.close();
  });

  it('sandboxes starting or running: the third is a 429 and is not made; a paused one makes room, and resuming it past the quota is a 429', async () => {
    const a = await t.newUser();
    const create = () => t.request('POST', '/api/v1/sandboxes', { key: a.key, body: {} });
    const first = await create();
    const second = await create();
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await create();
    expect(third).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('USER_MAX_RUNNING_SANDBOXES=2') },
    });
    expect((await t.request('GET', '/api/v1/sandboxes/search', { key: a.key })).body.items).toHaveLength(2);
    // Another user is not affected.
    const b = await t.newUser();
    expect((await t.request('POST', '/api/v1/sandboxes', { key: b.key, body: {} })).status).toBe(200);

    await waitForStatus(t, a.key, first.body.id, 'RUNNING', 60_000);
    expect((await t.request('POST', `/api/v1/sandboxes/${first.body.id}/pause`, { key: a.key })).body.status).toBe(
      'PAUSED',
    );
    expect((await create()).status).toBe(200);
    const resumed = await t.request('POST', `/api/v1/sandboxes/${first.body.id}/resume`, { key: a.key });
    expect(resumed).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('pause or delete one first') },
    });
    expect((await t.request('GET', `/api/v1/sandboxes?id=${first.body.id}`, { key: a.key })).body[0].status).toBe(
      'PAUSED',
    );
  }, 120_000);

  it('API keys: past the quota a 429; revoking one makes room', async () => {
    const u = await t.newUser(); // its first key counts
    const create = () => t.request('POST', '/api/v1/api-keys', { key: u.key, body: { name: 'more' } });
    const made = [await create(), await create()];
    expect(made.map((r) => r.status)).toEqual([201, 201]);
    expect(await create()).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('USER_MAX_API_KEYS=3') },
    });
    expect((await t.request('GET', '/api/v1/api-keys/search', { key: u.key })).body.items).toHaveLength(3);
    expect((await t.request('DELETE', `/api/v1/api-keys/${made[0]!.body.id}`, { key: u.key })).status).toBeLessThan(
      300,
    );
    expect((await create()).status).toBe(201);
  });

  it('event sockets: the third of a user is closed 4429; closing one makes room; another user is not affected', async () => {
    const u = await t.newUser();
    const c = await t.newConversation(u.userId);
    const url = `${t.url.replace(/^http/, 'ws')}/api/v1/conversation/${c.conversationId}/events/socket?resend_all=true`;
    const open = [connect(url, { 'X-Access-Token': u.key }), connect(url, { 'X-Access-Token': u.key })];
    await Promise.all(open.map((s) => s.opened));
    // Both subscribed: an event reaches each.
    expect((await t.ingest(c.conversationId, c.sessionKey, messages(1))).status).toBe(200);
    await Promise.all(open.map((s) => s.waitFor(1)));
    const third = connect(url, { 'X-Access-Token': u.key });
    expect(await third.closed).toEqual({
      code: CLOSE_TOO_MANY,
      reason: expect.stringContaining('USER_MAX_WEBSOCKETS=2'),
    });

    const other = await t.newUser();
    const theirs = await t.newConversation(other.userId);
    const otherSocket = connect(
      `${t.url.replace(/^http/, 'ws')}/api/v1/conversation/${theirs.conversationId}/events/socket?resend_all=true`,
      { 'X-Access-Token': other.key },
    );
    expect((await t.ingest(theirs.conversationId, theirs.sessionKey, messages(1))).status).toBe(200);
    await otherSocket.waitFor(1);

    open[0]!.ws.close();
    await open[0]!.closed;
    const again = connect(url, { 'X-Access-Token': u.key });
    expect((await t.ingest(c.conversationId, c.sessionKey, messages(1))).status).toBe(200);
    await again.waitFor(1);
    for (const s of [open[1]!, again, otherSocket]) s.ws.close();
  });
});
