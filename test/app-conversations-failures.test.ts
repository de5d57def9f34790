/**
 * Starts that fail, end to end (the api, the start-task workflow on a real worker, process sandboxes): a
 * setup script that fails gives ERROR with the end of its output, found by an operator through the
 * workflow's search attributes and summaries; a start that fails after creating its own sandbox deletes
 * it, one the request named stays; another user's sandbox is not found; a bad request is a 422 and starts
 * nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sandboxWorkflowId, startTaskWorkflowId } from '../src/temporal/shared';
import {
  dataDir,
  service,
  streamStart,
  t,
  useAppConversationStarts,
  user,
  workflowsMatching,
} from './helpers/app-conversation-starts';
import { runtimesUnder, waitForStatus } from './helpers/sandboxes';
import { bareRepo } from './helpers/git-repo';
import { setTimeout as sleep } from 'node:timers/promises';

describe('app conversation starts', () => {
  useAppConversationStarts();

  it('a failing setup script gives ERROR with the end of its output', async () => {
    const repo = bareRepo(dataDir, 'broken', {
      '.agents/setup.sh': 'echo "installing dependencies"\necho "error: no such package: left-pad" >&2\nexit 3\n',
    });
    const started = await streamStart({ selected_repository: repo });
    const statuses = started.body.map((s: any) => s.status);
    expect(statuses).toEqual([
      'WORKING',
      'WAITING_FOR_SANDBOX',
      'PREPARING_REPOSITORY',
      'RUNNING_SETUP_SCRIPT',
      'ERROR',
    ]);
    const error = started.body.at(-1);
    expect(error.detail).toMatch(/setup script \.agents\/setup\.sh failed \(exit 3\)/);
    expect(error.detail).toContain('error: no such package: left-pad');

    // An operator finds the failed start by owner, status and conversation, and sees its sandbox.
    const q = `OwnerUserId = "${user.userId}" AND StartTaskStatus = "ERROR" AND ConversationId = "${error.id}"`;
    const found = await workflowsMatching(q);
    expect(found.map((w) => w.workflowId)).toEqual([startTaskWorkflowId(error.id)]);
    expect(found[0]!.searchAttributes.SandboxId).toEqual([error.sandbox_id]);
    expect(
      await workflowsMatching(
        `OwnerUserId = "${user.userId}" AND StartTaskStatus = "READY" AND ConversationId = "${error.id}"`,
        0,
      ),
    ).toEqual([]);

    // Its summary and its steps' summaries read without decoding payloads.
    const client = await service.temporal();
    const handle = client.workflow.getHandle(startTaskWorkflowId(error.id));
    const described = await handle.describe();
    expect(await described.staticSummary()).toBe(`Start for user ${user.userId}: ${JSON.stringify(repo)}`);
    expect(await described.staticDetails()).toContain(`- conversation: ${error.id}`);
    const history = await handle.fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8')));
    expect(summaries).toEqual([
      'start a new sandbox',
      `wait for sandbox ${error.sandbox_id} to run`,
      `clone ${JSON.stringify(repo)}`,
      'run the setup script (workspace "broken")',
      `delete sandbox ${error.sandbox_id} (the start failed)`,
    ]);
  }, 60_000);

  it('a start that fails after creating its own sandbox deletes it through its workflow; a sandbox the request named stays', async () => {
    const missing = path.join(dataDir, 'no-such-repository.git');
    const started = await streamStart({ selected_repository: missing });
    expect(started.body.map((s: any) => s.status)).toEqual([
      'WORKING',
      'WAITING_FOR_SANDBOX',
      'PREPARING_REPOSITORY',
      'ERROR',
    ]);
    const failed = started.body.at(-1);
    // Deleted before the start reported ERROR: not left running until its idle timeout.
    const deleted = await waitForStatus(t, user.key, failed.sandbox_id, 'DELETED', 10_000);
    expect(deleted).toMatchObject({ status_detail: 'deleted on request', exposed_urls: [], session_api_key: null });
    expect(failed.detail).toMatch(/^Cloning .*no-such-repository\.git failed/);
    expect(failed.detail.split('\n').at(-1)).toBe(
      `The sandbox ${failed.sandbox_id} that this start created was deleted.`,
    );
    const dir = path.join(dataDir, 'sandboxes', failed.sandbox_id);
    expect(fs.existsSync(dir)).toBe(false);
    expect(runtimesUnder(dir)).toEqual([]);
    // The sandbox's own workflow did it, and ended.
    const client = await service.temporal();
    const described = await client.workflow.getHandle(sandboxWorkflowId(failed.sandbox_id)).describe();
    expect(described.status.name).toBe('COMPLETED');

    const mine = (await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} })).body;
    await waitForStatus(t, user.key, mine.id, 'RUNNING');
    const named = await streamStart({ sandbox_id: mine.id, selected_repository: missing });
    expect(named.body.at(-1)).toMatchObject({ status: 'ERROR', sandbox_id: mine.id });
    expect(named.body.at(-1).detail).not.toContain('that this start created');
    await sleep(500);
    expect((await t.request('GET', `/api/v1/sandboxes?id=${mine.id}`, { key: user.key })).body[0].status).toBe(
      'RUNNING',
    );
    await t.request('DELETE', `/api/v1/sandboxes/${mine.id}`, { key: user.key });
  }, 60_000);

  it("refuses another user's sandbox: ERROR saying it was not found", async () => {
    const other = await t.newUser();
    const theirs = await t.request('POST', '/api/v1/sandboxes', { key: other.key, body: {} });
    const started = await streamStart({ sandbox_id: theirs.body.id });
    expect(started.body.map((s: any) => s.status)).toEqual(['WORKING', 'WAITING_FOR_SANDBOX', 'ERROR']);
    expect(started.body.at(-1).detail).toMatch(/Sandbox .* not found/);
  });

  it('answers 422 for a bad request and starts nothing', async () => {
    const before = await t.database.db.collection('start_tasks').countDocuments();
    const bad = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { git_provider: 'sourceforge', trigger: 'nope', observability_metadata: { mixed: [1, 'a'] } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc.join('.'))).toEqual(
      expect.arrayContaining(['body.git_provider', 'body.trigger']),
    );
    expect(await t.database.db.collection('start_tasks').countDocuments()).toBe(before);
  });
});
