/**
 * A member of an organization with quotas of its own waits in its line too, after their own: past the
 * organization's running-sandbox quota a member's start waits in the organization's line (and a create
 * is a 429) until another member pauses or deletes a sandbox; past its concurrent-start quota, until
 * another member's start ends; someone outside the organization is not held up. The user's own line is
 * in start-queue.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporal as proto } from '@temporalio/proto';
import { admissionLineQuery, organizationAdmissionWorkflowId, startTaskWorkflowId } from '../src/temporal/shared';
import { bareRepo } from './helpers/git-repo';
import {
  dir,
  ended,
  line,
  lineEnded,
  llm,
  newUser,
  start,
  startEnded,
  t,
  temporal,
  useStartQueue,
  waiting,
} from './helpers/start-queue';
import { startTask, waitForStartTask } from './helpers/start-tasks';

describe("the start lines (USER_MAX_RUNNING_SANDBOXES, USER_MAX_CONCURRENT_STARTS, and an organization's own)", () => {
  useStartQueue();

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
});
