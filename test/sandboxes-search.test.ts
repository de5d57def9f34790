/**
 * Sandboxes end to end (as in sandboxes.test.ts), searched and refused: users kept apart, bad input
 * answered with 422, searches with filters and a cursor, and the workflow's search attributes kept
 * current for operators across a continue-as-new.
 */
import type { Client } from '@temporalio/client';
import { sandboxWorkflowId } from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { waitForStatus } from './helpers/sandboxes';
import { useSandboxesService } from './helpers/sandboxes-service';
import { setTimeout as sleep } from 'node:timers/promises';

describe('sandboxes', () => {
  const service = useSandboxesService('sandboxes-search-');
  const { create, running } = service;
  let t: TestApi;
  let alice: { userId: string; key: string };
  let bob: { userId: string; key: string };
  let client: Client;
  beforeAll(() => {
    ({ t, alice, bob, client } = service.started());
  });

  it("keeps users apart: another user's sandbox is 404 and never listed", async () => {
    const s = await create();
    for (const [method, p] of [
      ['POST', `/api/v1/sandboxes/${s.id}/pause`],
      ['POST', `/api/v1/sandboxes/${s.id}/resume`],
      ['DELETE', `/api/v1/sandboxes/${s.id}`],
    ] as const) {
      const r = await t.request(method, p, { key: bob.key });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ detail: 'Sandbox not found' });
    }
    expect((await t.request('GET', `/api/v1/sandboxes?id=${s.id}`, { key: bob.key })).body).toEqual([null]);
    const listed = await t.request('GET', '/api/v1/sandboxes/search', { key: bob.key });
    expect(listed.body.items.map((x: any) => x.id)).not.toContain(s.id);
    expect((await t.request('POST', '/api/v1/sandboxes/nope/pause', { key: alice.key })).status).toBe(404);
    expect((await t.request('GET', '/api/v1/sandboxes/search')).status).toBe(401);
  });

  it('answers bad input with 422 and starts nothing', async () => {
    const before = await t.database.db.collection('sandboxes').countDocuments();
    const unknownBody = await t.request('POST', '/api/v1/sandboxes', {
      key: alice.key,
      body: { sandbox_spec_id: 'nope' },
    });
    expect(unknownBody.status).toBe(422);
    expect(unknownBody.body.detail[0]).toMatchObject({
      loc: ['body', 'sandbox_spec_id'],
      type: 'value_error',
      input: 'nope',
    });
    const unknownQuery = await t.request('POST', '/api/v1/sandboxes?sandbox_spec_id=nope', { key: alice.key });
    expect(unknownQuery.status).toBe(422);
    expect(unknownQuery.body.detail[0].loc).toEqual(['query', 'sandbox_spec_id']);
    const extra = await t.request('POST', '/api/v1/sandboxes', { key: alice.key, body: { image: 'x' } });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ loc: ['body', 'image'], type: 'extra_forbidden' });
    expect(await t.database.db.collection('sandboxes').countDocuments()).toBe(before);

    for (const [q, loc] of [
      ['limit=0', ['query', 'limit']],
      ['limit=101', ['query', 'limit']],
      ['status__eq=SLEEPING', ['query', 'status__eq']],
      ['created_at__gte=yesterday', ['query', 'created_at__gte']],
      ['page_id=bogus!', ['query', 'page_id']],
    ] as const) {
      const r = await t.request('GET', `/api/v1/sandboxes/search?${q}`, { key: alice.key });
      expect(r.status).toBe(422);
      expect(r.body.detail[0].loc).toEqual(loc);
    }
    expect((await t.request('GET', '/api/v1/sandboxes', { key: alice.key })).status).toBe(422);
    const many = Array.from({ length: 101 }, (_, i) => `id=s${i}`).join('&');
    expect((await t.request('GET', `/api/v1/sandboxes?${many}`, { key: alice.key })).status).toBe(422);
  });

  it('searches with filters and a cursor, newest first', async () => {
    const carol = await t.newUser();
    const made: any[] = [];
    for (let i = 0; i < 3; i++) {
      made.push(await create(carol.key));
      await sleep(5);
    }
    const all = await t.request('GET', '/api/v1/sandboxes/search', { key: carol.key });
    expect(all.body.items.map((x: any) => x.id)).toEqual(made.map((x) => x.id).reverse());
    const first = await t.request('GET', '/api/v1/sandboxes/search?limit=2', { key: carol.key });
    expect(first.body.items).toHaveLength(2);
    const second = await t.request('GET', `/api/v1/sandboxes/search?limit=2&page_id=${first.body.next_page_id}`, {
      key: carol.key,
    });
    expect(second.body.items.map((x: any) => x.id)).toEqual([made[0].id]);
    expect(second.body.next_page_id).toBeNull();
    const since = await t.request(
      'GET',
      `/api/v1/sandboxes/search?created_at__gte=${encodeURIComponent(made[1].created_at)}`,
      { key: carol.key },
    );
    expect(since.body.items.map((x: any) => x.id)).toEqual([made[2].id, made[1].id]);
    const before = await t.request(
      'GET',
      `/api/v1/sandboxes/search?created_at__lt=${encodeURIComponent(made[1].created_at)}`,
      { key: carol.key },
    );
    expect(before.body.items.map((x: any) => x.id)).toEqual([made[0].id]);
    const bySpec = await t.request('GET', '/api/v1/sandboxes/search?sandbox_spec_id__eq=other', { key: carol.key });
    expect(bySpec.body.items).toEqual([]);
    for (const s of made) await waitForStatus(t, carol.key, s.id, 'RUNNING');
    const runningOnly = await t.request('GET', '/api/v1/sandboxes/search?status__eq=RUNNING', { key: carol.key });
    expect(runningOnly.body.items).toHaveLength(3);
    for (const s of made) await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: carol.key });
  });

  it('keeps its search attributes current for operators, and continues as new without losing its state', async () => {
    const s = await running();
    const handle = client.workflow.getHandle(sandboxWorkflowId(s.id));
    const query = `WorkflowId = "${sandboxWorkflowId(s.id)}" AND OwnerUserId = "${alice.userId}" AND SandboxStatus = "RUNNING"`;
    const listed = async (q: string) => {
      const ids: string[] = [];
      for await (const w of client.workflow.list({ query: q })) ids.push(w.workflowId);
      return ids;
    };
    await eventually(async () => expect(await listed(query)).toEqual([sandboxWorkflowId(s.id)]), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });

    // SANDBOX_HISTORY_LIMIT=120: health checks every 250 ms fill that in a few seconds.
    const first = (await handle.describe()).runId;
    // Health checks run late on a loaded machine (one run measured 19.5 s here under load): a generous bound.
    await eventually(async () => expect((await handle.describe()).runId).not.toBe(first), {
      timeoutMs: 45_000,
      intervalMs: 100,
    });
    expect(await handle.query('state')).toEqual({ status: 'RUNNING', status_detail: null });
    const paused = await t.request('POST', `/api/v1/sandboxes/${s.id}/pause`, { key: alice.key });
    expect(paused.body.status).toBe('PAUSED');
    const pausedQuery = `WorkflowId = "${sandboxWorkflowId(s.id)}" AND SandboxStatus = "PAUSED"`;
    await eventually(async () => expect(await listed(pausedQuery)).toEqual([sandboxWorkflowId(s.id)]), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });

    // The provider calls read as what they do in the Temporal UI: the first run started the runtime, the
    // current one paused it.
    const summaries = async (runId?: string) =>
      ((await client.workflow.getHandle(sandboxWorkflowId(s.id), runId).fetchHistory()).events ?? [])
        .filter((e) => e.activityTaskScheduledEventAttributes)
        .map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8')));
    expect(await summaries(first)).toEqual(['start the runtime']);
    expect(await summaries()).toEqual(['pause the runtime']);
  }, 90_000);
});
