/**
 * The host callback processors when things go wrong, against loopback stand-ins of their hosts, with the
 * real api, Temporal, worker processes and the built-in runtime: a worker killed while its post was in
 * flight leaves one post; a host that refuses ends in one recorded failure (the credential it echoes
 * masked), one that keeps failing in a bounded number of tries; a processor that names a server the
 * operator does not allow, or carries a credential, is refused before anything starts; no credential is
 * in any round record.
 */
import {
  chat,
  expectNoCredentialRecorded,
  gitB,
  gitC,
  recorded,
  results,
  startFinishing,
  t,
  TOKENS,
  trackerA,
  useCallbackHosts,
  user,
  workers,
} from './helpers/callback-hosts';
import { eventually } from './helpers/eventually';
import { setTimeout as sleep } from 'node:timers/promises';

describe('callback processors that post to their hosts', () => {
  useCallbackHosts();

  it('a worker killed while its post is in flight: the next worker finds the post and makes no second one', async () => {
    const held = gitB.hold();
    const startP = startFinishing({
      kind: 'GitHostBV1CallbackProcessor',
      git_host_b_view_data: { project_id: 'acme/killed', mr_iid: 2 },
    });
    await held.stored;
    await workers.kill(workers.all.at(-1)!);
    held.release(); // answered to no one: the worker is gone
    await workers.start();
    const id = await startP;
    const [round] = await recorded(id, 'ok');
    expect(round!.attempts).toBeGreaterThanOrEqual(2);
    expect(gitB.posts.filter((p) => p.place === 'acme/killed!2')).toHaveLength(1);
  }, 120_000);

  it('a host that refuses (4xx) ends in one recorded failure, the credential it echoes masked', async () => {
    gitC.refuseWith = 403;
    try {
      const id = await startFinishing({
        kind: 'GitHostCV1CallbackProcessor',
        git_host_c_view_data: { repo: 'acme/refused', pr_id: 1 },
      });
      const [failed] = await recorded(id, 'failed');
      expect(failed).toMatchObject({
        attempts: 1,
        detail: expect.stringMatching(/^git host C refused the summary on acme\/refused#1 \(403\)/),
      });
      // The host echoed the credential it was sent: the record says only that it did.
      expect(failed!.detail).toContain('"authorization":"Bearer ***"');
      expect(failed!.detail).not.toContain(TOKENS.gitC);
    } finally {
      gitC.refuseWith = null;
    }
  }, 90_000);

  it("the chat service's ok: false is a refusal: one recorded failure", async () => {
    chat.refuseWith = 404; // ok: false, channel_not_found
    try {
      const id = await startFinishing({
        kind: 'ChatV1CallbackProcessor',
        chat_view_data: { channel_id: 'CGONE', thread_ts: '1.2' },
      });
      const [failed] = await recorded(id, 'failed');
      expect(failed).toMatchObject({ attempts: 1, detail: expect.stringMatching(/channel_not_found/) });
    } finally {
      chat.refuseWith = null;
    }
  }, 90_000);

  it('a host that keeps failing (5xx) is tried a bounded number of times, then the failure is recorded', async () => {
    trackerA.refuseWith = 503;
    try {
      const before = trackerA.postRequests;
      const id = await startFinishing({
        kind: 'IssueTrackerAV1CallbackProcessor',
        svc_acc_email: 'bot@acme.example',
        issue_key: 'WID-99',
        issue_tracker_a_cloud_id: 'cloud-1',
      });
      const failed = await eventually(
        async () => {
          const r = (await results(id)).find((x) => x.status === 'failed' && x.attempts === 6);
          return r ?? false;
        },
        { timeoutMs: 90_000, intervalMs: 500, what: 'the sixth and last failed try' },
      );
      expect(failed.detail).toMatch(/^issue tracker A answered 503/);
      expect(failed.detail).toContain('"authorization":"Basic ***"');
      await sleep(3000);
      expect(trackerA.postRequests - before).toBe(6); // then no more
    } finally {
      trackerA.refuseWith = null;
    }
  }, 150_000);

  it('a processor naming a server the operator does not allow, or carrying a credential, is refused with 422; nothing starts', async () => {
    const tasks = async () =>
      (await t.request('GET', '/api/v1/app-conversations/start-tasks/count', { key: user.key })).body as number;
    const before = await tasks();
    const refused = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: {
        processors: [
          {
            kind: 'IssueTrackerBV1CallbackProcessor',
            issue_key: 'OPS-1',
            workspace_name: 'x',
            base_api_url: 'http://169.254.169.254/latest',
          },
        ],
      },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0]).toMatchObject({
      loc: ['body', 'processors', 0, 'base_api_url'],
      msg: expect.stringMatching(/not among the issue tracker B servers/),
    });
    const clear = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: {
        processors: [
          {
            kind: 'IssueTrackerAV1CallbackProcessor',
            svc_acc_email: 'bot@acme.example',
            issue_key: 'WID-1',
            issue_tracker_a_cloud_id: 'c',
            decrypted_api_key: 'atat-in-clear',
          },
        ],
      },
    });
    expect(clear.status).toBe(422);
    expect(JSON.stringify(clear.body)).toMatch(
      /store the service account's API key as the secret ISSUE_TRACKER_A_API_KEY/,
    );
    expect(JSON.stringify(clear.body)).not.toMatch(/atat-in-clear/);
    expect(await tasks()).toBe(before);
  });

  it('no credential of any host is in a round record or the worker-visible failure', async () => {
    await expectNoCredentialRecorded(t);
  });
});
