/**
 * A start over its user's quotas waits in line (the user's admission workflow) instead of failing: it
 * stays WAITING_FOR_SANDBOX with its place and what holds it up in the detail, goes on by itself when a
 * sandbox is paused or a start ends, in the order the starts came; another user is not held up; a start
 * that waits past START_QUEUE_WAIT_MS ends ERROR saying so; the line's workflow ends once nobody is in it. A
 * member of an organization with quotas of its own waits in its line too, after their own.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import {
  admissionLineQuery,
  organizationAdmissionWorkflowId,
  startAdmissionWorkflowId,
  startTaskSnapshotsQuery,
  startTaskWorkflowId,
} from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { newUserWithLlm } from './helpers/agent';
import { startTask, startTaskEnded, startUntilEnded, waitForStartTask } from './helpers/start-tasks';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

const QUEUE_WAIT_MS = 25_000;

describe("the start lines (USER_MAX_RUNNING_SANDBOXES, USER_MAX_CONCURRENT_STARTS, and an organization's own)", () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let dir: string;
  let llm: ScriptedLlm;
  let temporal: Client;

  beforeAll(async () => {
    service = await startServiceUnderTest('start-queue-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      USER_MAX_RUNNING_SANDBOXES: '1',
      USER_MAX_CONCURRENT_STARTS: '2',
      START_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
      START_QUEUE_POLL_MS: '300',
      USER_MAX_PENDING_STARTS: '3',
      USER_MAX_CONVERSATIONS: '6',
    });
    ({ t, dataDir: dir } = service);
    llm = await new ScriptedLlm([]).start();
    temporal = await service.temporal();
  }, 60_000);

  afterAll(async () => {
    await service?.close();
    await llm?.close();
  });

  const newUser = () => newUserWithLlm(t, llm);
  const start = async (key: string, body: object = {}) => {
    const r = await t.request('POST', '/api/v1/app-conversations', { key, body });
    expect(r.status).toBe(200);
    return r.body.id as string;
  };
  const ended = startTaskEnded;
  /** A start sent (the api accepts it) and followed until it has ended: its task. */
  const startEnded = (key: string) => startUntilEnded(t, key, {});
  const waiting = (place: number) => (s: any) =>
    s.status === 'WAITING_FOR_SANDBOX' &&
    typeof s.detail === 'string' &&
    s.detail.startsWith(`Waiting in line at place ${place}: `);
  const line = (userId: string) =>
    temporal.workflow.getHandle(startAdmissionWorkflowId(userId)).query(admissionLineQuery);
  const lineEnded = (userId: string, workflowId = startAdmissionWorkflowId(userId)) =>
    eventually(async () => (await temporal.workflow.getHandle(workflowId).describe()).status.name === 'COMPLETED', {
      timeoutMs: 15_000,
      intervalMs: 200,
      what: 'the line to end',
    });
  /** An organization of `members` (the first its owner, the others admins), each acting in it, with its own quotas. */
  const team = async (
    members: { userId: string; key: string }[],
    quotas: { running_sandboxes?: number; concurrent_starts?: number },
  ) => {
    const org = await t.orgs.createOrganization(`team ${members.length}`, members[0]!.userId);
    for (const m of members.slice(1)) await t.stores.memberships.put(org.id, m.userId, 'admin');
    for (const m of members)
      expect((await t.request('POST', `/api/organizations/${org.id}/switch`, { key: m.key })).status).toBe(200);
    await t.setOrgLlm(members[0]!.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-org' });
    await t.stores.organizationQuotas.set(org.id, quotas);
    return org.id;
  };

  it('past the running-sandbox quota starts wait in order, told their place; a pause lets the first on, its end the next; another user goes on meanwhile', async () => {
    const a = await newUser();
    const one = await startEnded(a.key);
    expect(one).toMatchObject({ status: 'READY', detail: null });

    // A's one sandbox runs: the next two starts wait, in the order they came.
    const second = await start(a.key);
    await waitForStartTask(t, a.key, second, waiting(1), 20_000);
    const third = await start(a.key);
    const thirdWaits = await waitForStartTask(t, a.key, third, waiting(2), 20_000);
    expect(thirdWaits.detail).toContain('USER_MAX_RUNNING_SANDBOXES=1');
    expect(thirdWaits.detail).toContain('paused or deleted');
    expect(await line(a.userId)).toEqual({ admitted: [], waiting: [second, third] });
    expect((await t.request('GET', '/api/v1/sandboxes/search', { key: a.key })).body.items).toHaveLength(1);

    // Another user is not held up by A's line.
    const b = await newUser();
    expect(await startEnded(b.key)).toMatchObject({ status: 'READY' });
    expect((await startTask(t, a.key, second)).status).toBe('WAITING_FOR_SANDBOX');

    // Pausing A's sandbox makes room: the second goes on by itself, the third moves up.
    const paused = await t.request('POST', `/api/v1/sandboxes/${one.sandbox_id}/pause`, { key: a.key });
    expect(paused.body.status).toBe('PAUSED');
    const secondDone = await waitForStartTask(t, a.key, second, ended);
    expect(secondDone).toMatchObject({ status: 'READY', detail: null });
    expect(secondDone.sandbox_id).not.toBe(one.sandbox_id);
    await waitForStartTask(t, a.key, third, waiting(1), 20_000);

    // Deleting the second's sandbox lets the third on.
    expect(
      (await t.request('DELETE', `/api/v1/sandboxes/${secondDone.sandbox_id}`, { key: a.key })).status,
    ).toBeLessThan(300);
    expect(await waitForStartTask(t, a.key, third, ended)).toMatchObject({ status: 'READY' });
    await lineEnded(a.userId);
  }, 120_000);

  it('starts in a running sandbox need no room for one, but the concurrent-start quota: the third waits for one of two to end', async () => {
    const c = await newUser();
    const sandboxId = (await startEnded(c.key)).sandbox_id;
    // Each start runs a setup script of 3 s, so the first two are still under way when the third asks.
    const ids: string[] = [];
    for (const name of ['slow-1', 'slow-2', 'slow-3']) {
      ids.push(
        await start(c.key, {
          sandbox_id: sandboxId,
          selected_repository: bareRepo(dir, name, { '.agents/setup.sh': 'sleep 3\n' }),
        }),
      );
    }
    const done = await Promise.all(ids.map((id) => waitForStartTask(t, c.key, id, ended)));
    expect(done.map((s) => s.status)).toEqual(['READY', 'READY', 'READY']);
    // Two went on at once; the last to reach the line (the third sent, unless the workflows asked in
    // another order under load) waited its turn, told why: the starts under way.
    const histories = await Promise.all(
      ids.map((id) => temporal.workflow.getHandle(startTaskWorkflowId(id)).query(startTaskSnapshotsQuery)),
    );
    const waited = histories.map((h) => h.filter((s) => s.status === 'WAITING_FOR_SANDBOX' && s.detail));
    expect(waited.map((w) => w.length).sort()).toEqual([0, 0, 1]);
    expect(waited.find((w) => w.length === 1)![0]!.detail).toBe(
      'Waiting in line at place 1: as many of your starts are under way as one user may have (USER_MAX_CONCURRENT_STARTS=2); it goes on when one of them ends',
    );
    await lineEnded(c.userId);
  }, 120_000);

  it('a start that resumes a paused sandbox needs room for it: it waits until another is deleted, then resumes it', async () => {
    const e = await newUser();
    const paused = (await startEnded(e.key)).sandbox_id;
    expect((await t.request('POST', `/api/v1/sandboxes/${paused}/pause`, { key: e.key })).body.status).toBe('PAUSED');
    const running = (await startEnded(e.key)).sandbox_id;
    const resume = await start(e.key, { sandbox_id: paused });
    expect((await waitForStartTask(t, e.key, resume, waiting(1), 20_000)).detail).toContain(
      'USER_MAX_RUNNING_SANDBOXES=1',
    );
    expect((await t.request('GET', `/api/v1/sandboxes?id=${paused}`, { key: e.key })).body[0].status).toBe('PAUSED');
    expect((await t.request('DELETE', `/api/v1/sandboxes/${running}`, { key: e.key })).status).toBeLessThan(300);
    expect(await waitForStartTask(t, e.key, resume, ended)).toMatchObject({ status: 'READY', sandbox_id: paused });
    await lineEnded(e.userId);
  }, 120_000);

  it('starts not ended past USER_MAX_PENDING_STARTS are a 429 and make nothing; a resend of one of them still joins it', async () => {
    const f = await newUser();
    const first = await start(f.key);
    expect((await waitForStartTask(t, f.key, first, ended)).status).toBe('READY');
    // Its one sandbox runs: every further start waits in line, and stays not ended.
    const queued: string[] = [];
    for (let i = 1; i <= 3; i++) {
      queued.push(await start(f.key));
      await waitForStartTask(t, f.key, queued.at(-1)!, waiting(i), 20_000);
    }
    const refused = await t.request('POST', '/api/v1/app-conversations', { key: f.key, body: {} });
    expect(refused).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('USER_MAX_PENDING_STARTS=3') },
    });
    const joined = await t.request('POST', '/api/v1/app-conversations', {
      key: f.key,
      body: { conversation_id: queued[0] },
    });
    expect(joined).toMatchObject({ status: 200, body: { id: queued[0] } });
    expect((await t.request('GET', '/api/v1/app-conversations/start-tasks/count', { key: f.key })).body).toBe(4);
    expect(await line(f.userId)).toEqual({ admitted: [], waiting: queued });
    // Deleting its sandbox lets them through, one at a time (one sandbox at most).
    const sandboxId = (await startTask(t, f.key, first)).sandbox_id;
    expect((await t.request('DELETE', `/api/v1/sandboxes/${sandboxId}`, { key: f.key })).status).toBeLessThan(300);
    expect((await waitForStartTask(t, f.key, queued[0]!, ended)).status).toBe('READY');
    expect((await t.request('POST', '/api/v1/app-conversations', { key: f.key, body: {} })).status).toBe(200);
  }, 120_000);

  it('past USER_MAX_CONVERSATIONS kept (with those unfinished starts will make) a start is a 429; deleting one makes room', async () => {
    const g = await newUser();
    const first = await start(g.key);
    const sandboxId = (await waitForStartTask(t, g.key, first, ended)).sandbox_id;
    const ids = [first];
    for (let i = 0; i < 4; i++) {
      ids.push(await start(g.key, { sandbox_id: sandboxId }));
      expect((await waitForStartTask(t, g.key, ids.at(-1)!, ended)).status).toBe('READY');
    }
    // Five kept and one under way: the seventh would pass the bound.
    ids.push(await start(g.key, { sandbox_id: sandboxId }));
    const refused = await t.request('POST', '/api/v1/app-conversations', {
      key: g.key,
      body: { sandbox_id: sandboxId },
    });
    expect(refused).toMatchObject({
      status: 429,
      body: { detail: expect.stringContaining('USER_MAX_CONVERSATIONS=6): delete some first') },
    });
    expect((await waitForStartTask(t, g.key, ids.at(-1)!, ended)).status).toBe('READY');
    expect((await t.request('GET', '/api/v1/app-conversations/count', { key: g.key })).body).toBe(6);
    const conversationId = (await startTask(t, g.key, ids[1]!)).app_conversation_id;
    expect((await t.request('DELETE', `/api/v1/app-conversations/${conversationId}`, { key: g.key })).status).toBe(200);
    expect(
      (await t.request('POST', '/api/v1/app-conversations', { key: g.key, body: { sandbox_id: sandboxId } })).status,
    ).toBe(200);
  }, 120_000);

  it("past its organization's running-sandbox quota a member's start waits in the organization's line (after their own), and a create is a 429; a pause by another member lets it on", async () => {
    const [a, b, outsider] = [await newUser(), await newUser(), await newUser()];
    const orgId = await team([a, b], { running_sandboxes: 1 });
    const one = await startEnded(a.key);
    expect(one).toMatchObject({ status: 'READY' });
    expect((await t.stores.sandboxes.get(one.sandbox_id))?.organization_id).toBe(orgId);

    // B has no sandbox of their own (their own line lets them through), but the organization has one.
    const refused = await t.request('POST', '/api/v1/sandboxes', { key: b.key, body: {} });
    expect(refused).toMatchObject({
      status: 429,
      body: {
        detail: expect.stringContaining(
          `Your organization ${orgId} has 1 sandboxes starting or running, as many as it may (its own quota: 1)`,
        ),
      },
    });
    const second = await start(b.key);
    const waits = await waitForStartTask(t, b.key, second, waiting(1), 20_000);
    expect(waits.detail).toBe(
      "Waiting in line at place 1: your organization's sandboxes starting or running, with those its admitted starts are bringing up, are as many as it may have (its own quota: 1); it goes on when one of its members pauses or deletes one",
    );
    const orgLine = temporal.workflow.getHandle(organizationAdmissionWorkflowId(orgId));
    expect(await orgLine.query(admissionLineQuery)).toEqual({ admitted: [], waiting: [second] });
    expect(await line(b.userId)).toEqual({ admitted: [second], waiting: [] });

    // Someone outside the organization is not held up by it.
    expect(await startEnded(outsider.key)).toMatchObject({ status: 'READY' });
    expect((await startTask(t, b.key, second)).status).toBe('WAITING_FOR_SANDBOX');

    // A pauses theirs: B's start goes on, in a sandbox counted in the organization; both lines end.
    expect((await t.request('POST', `/api/v1/sandboxes/${one.sandbox_id}/pause`, { key: a.key })).body.status).toBe(
      'PAUSED',
    );
    const done = await waitForStartTask(t, b.key, second, ended);
    expect(done).toMatchObject({ status: 'READY', detail: null });
    expect((await t.stores.sandboxes.get(done.sandbox_id))?.organization_id).toBe(orgId);
    // Resuming A's sandbox would pass the organization's quota again.
    const resume = await t.request('POST', `/api/v1/sandboxes/${one.sandbox_id}/resume`, { key: a.key });
    expect(resume).toMatchObject({ status: 429, body: { detail: expect.stringContaining('(its own quota: 1)') } });
    // A start that resumes it waits in the organization's line instead, and resumes it once B's is deleted.
    const resumeStart = await start(a.key, { sandbox_id: one.sandbox_id });
    expect((await waitForStartTask(t, a.key, resumeStart, waiting(1), 20_000)).detail).toContain(
      "your organization's sandboxes starting or running",
    );
    expect((await t.request('DELETE', `/api/v1/sandboxes/${done.sandbox_id}`, { key: b.key })).status).toBeLessThan(
      300,
    );
    expect(await waitForStartTask(t, a.key, resumeStart, ended)).toMatchObject({
      status: 'READY',
      sandbox_id: one.sandbox_id,
    });
    // Removed from the organization (still their current one), B counts in no organization: not held by its quota.
    expect(await t.stores.memberships.remove(orgId, b.userId)).toBe(true);
    const unbound = await t.request('POST', '/api/v1/sandboxes', { key: b.key, body: {} });
    expect(unbound.status).toBe(200);
    expect((await t.stores.sandboxes.get(unbound.body.id))?.organization_id).toBeNull();
    expect((await t.request('DELETE', `/api/v1/sandboxes/${unbound.body.id}`, { key: b.key })).status).toBeLessThan(
      300,
    );
    await lineEnded(b.userId, organizationAdmissionWorkflowId(orgId));
    await lineEnded(b.userId);
    // RECORD_FIXTURES=1 keeps this start (its user's line, then its organization's) for the replay suite.
    if (process.env.RECORD_FIXTURES) {
      const history = await temporal.workflow.getHandle(startTaskWorkflowId(second)).fetchHistory();
      fs.writeFileSync(
        path.join(__dirname, 'fixtures', 'start-task-history-org-line.binpb'),
        proto.api.history.v1.History.encode(history).finish(),
      );
    }
  }, 120_000);

  it("past its organization's concurrent-start quota a member's start waits for another member's to end", async () => {
    const [c, d] = [await newUser(), await newUser()];
    const orgId = await team([c, d], { concurrent_starts: 1 });
    // C's start runs a setup script of 4 s: D's, sent meanwhile, waits for it to end.
    const slow = await start(c.key, {
      selected_repository: bareRepo(dir, 'org-slow', { '.agents/setup.sh': 'sleep 4\n' }),
    });
    await waitForStartTask(t, c.key, slow, (s) => s.status === 'RUNNING_SETUP_SCRIPT', 30_000);
    const next = await start(d.key);
    const waits = await waitForStartTask(t, d.key, next, waiting(1), 20_000);
    expect(waits.detail).toBe(
      "Waiting in line at place 1: as many starts of your organization's members are under way as it may have (its own quota: 1); it goes on when one of them ends",
    );
    expect(await waitForStartTask(t, c.key, slow, ended)).toMatchObject({ status: 'READY' });
    expect(await waitForStartTask(t, d.key, next, ended)).toMatchObject({ status: 'READY' });
    await lineEnded(d.userId, organizationAdmissionWorkflowId(orgId));
  }, 120_000);

  it(
    'a start that waits past START_QUEUE_WAIT_MS ends ERROR saying so, and leaves the line',
    async () => {
      const d = await newUser();
      expect((await startEnded(d.key)).status).toBe('READY');
      const late = await start(d.key);
      await waitForStartTask(t, d.key, late, waiting(1), 20_000);
      const gaveUp = await waitForStartTask(t, d.key, late, ended, QUEUE_WAIT_MS + 20_000);
      expect(gaveUp.status).toBe('ERROR');
      expect(gaveUp.detail).toContain(
        `waited ${QUEUE_WAIT_MS / 1000} s in line for its turn and did not get it (START_QUEUE_WAIT_MS); last seen at place 1: `,
      );
      expect(gaveUp.detail).toContain('USER_MAX_RUNNING_SANDBOXES=1');
      // Nothing was made for it, and the line is gone with it.
      expect((await t.request('GET', '/api/v1/sandboxes/search', { key: d.key })).body.items).toHaveLength(1);
      await lineEnded(d.userId);
    },
    QUEUE_WAIT_MS + 60_000,
  );
});
