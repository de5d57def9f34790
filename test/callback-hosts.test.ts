/**
 * The five host callback processors against loopback stand-ins of their hosts (git hosts B and C, issue
 * trackers A and B, the chat service), with the real api, Temporal, a worker process and the built-in
 * runtime: a finished conversation posts the agent's summary (asked of it through ask_agent) exactly once,
 * with the user's stored credential, and another round finds the post instead of making a second one; two
 * processors of one conversation post the same summary; should_request_summary false posts nothing. Hosts
 * that refuse or keep failing, a killed worker and refused processors are in callback-hosts-failures.test.ts.
 */
import { type HostPost } from './helpers/callback-host-stand-ins';
import {
  chat,
  expectNoCredentialRecorded,
  gitB,
  gitC,
  llm,
  recorded,
  results,
  startFinishing,
  SUMMARY,
  t,
  TOKENS,
  trackerA,
  trackerB,
  useCallbackHosts,
  user,
} from './helpers/callback-hosts';
import { eventually } from './helpers/eventually';
import { setTimeout as sleep } from 'node:timers/promises';

describe('callback processors that post to their hosts', () => {
  useCallbackHosts();

  const cases: {
    kind: string;
    host: () => { posts: HostPost[] };
    processor: Record<string, unknown>;
    place: string;
    text: (p: HostPost) => string;
    authorization: string;
  }[] = [
    {
      kind: 'GitHostBV1CallbackProcessor',
      host: () => gitB,
      processor: {
        kind: 'GitHostBV1CallbackProcessor',
        git_host_b_view_data: { project_id: 'acme/widgets', mr_iid: 7 },
      },
      place: 'acme/widgets!7',
      text: (p) => p.body.body,
      authorization: `Bearer ${TOKENS.gitB}`,
    },
    {
      kind: 'GitHostBV1CallbackProcessor (inline_mr_comment)',
      host: () => gitB,
      processor: {
        kind: 'GitHostBV1CallbackProcessor',
        git_host_b_view_data: { project_id: 'acme/widgets', mr_iid: 8, discussion_id: 'abc123' },
        inline_mr_comment: true,
      },
      place: 'acme/widgets!8#abc123',
      text: (p) => p.body.body,
      authorization: `Bearer ${TOKENS.gitB}`,
    },
    {
      kind: 'GitHostCV1CallbackProcessor',
      host: () => gitC,
      processor: { kind: 'GitHostCV1CallbackProcessor', git_host_c_view_data: { repo: 'acme/gadgets', pr_id: 3 } },
      place: 'acme/gadgets#3',
      text: (p) => p.body.content.raw,
      authorization: `Bearer ${TOKENS.gitC}`,
    },
    {
      kind: 'IssueTrackerAV1CallbackProcessor',
      host: () => trackerA,
      processor: {
        kind: 'IssueTrackerAV1CallbackProcessor',
        svc_acc_email: 'bot@acme.example',
        issue_key: 'WID-12',
        issue_tracker_a_cloud_id: 'cloud-1',
      },
      place: 'cloud-1/WID-12',
      text: (p) => p.body.body,
      authorization: `Basic ${Buffer.from(`bot@acme.example:${TOKENS.trackerA}`).toString('base64')}`,
    },
    {
      kind: 'IssueTrackerBV1CallbackProcessor',
      host: () => trackerB,
      processor: {
        kind: 'IssueTrackerBV1CallbackProcessor',
        issue_key: 'OPS-4',
        workspace_name: 'acme-dc',
        base_api_url: '' /* set below */,
      },
      place: 'OPS-4',
      text: (p) => p.body.body,
      authorization: `Bearer ${TOKENS.trackerB}`,
    },
    {
      kind: 'ChatV1CallbackProcessor',
      host: () => chat,
      processor: {
        kind: 'ChatV1CallbackProcessor',
        chat_view_data: { channel_id: 'C0123', thread_ts: '1700000000.000100' },
      },
      place: 'C0123/1700000000.000100',
      text: (p) => p.body.text,
      authorization: `Bearer ${TOKENS.chat}`,
    },
  ];

  it.each(cases)(
    '$kind: a finished conversation posts the summary the agent gave once, with the stored credential; another round posts nothing more',
    async (c) => {
      const processor = c.kind.startsWith('IssueTrackerB')
        ? { ...c.processor, base_api_url: trackerB.url }
        : c.processor;
      const id = await startFinishing(processor);
      const [round] = await recorded(id, 'ok');
      expect(round).toMatchObject({ kind: processor.kind, actions: ['comment-posted'], attempts: 1 });
      const posts = c.host().posts.filter((p) => p.place === c.place);
      expect(posts).toHaveLength(1);
      expect(c.text(posts[0]!)).toMatch(new RegExp(`^The agent finished:\\n\\n${SUMMARY.replace(/\./g, '\\.')}`));
      expect(posts[0]!.authorization).toBe(c.authorization);
      // The summary was asked of the agent: one LLM call without tools, after the step that finished.
      const ask = llm.requests.at(-1)!;
      expect(ask.body.tools ?? []).toEqual([]);
      expect(JSON.stringify(ask.body.messages?.at(-1))).toMatch(/summarize your work/);

      // The agent finishes again, and the round's record is gone (a crash right after the post): the post
      // is found on the host (its marker, property or metadata), not made twice.
      await t.database.db.collection('callback_results').deleteMany({ conversation_id: id });
      llm.load([{ content: 'Nothing else.' }, { content: 'A second summary.' }]);
      const sent = await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, {
        key: user.key,
        body: { content: [{ text: 'Anything else?' }] },
      });
      expect(sent.status).toBe(200);
      await recorded(id, 'ok');
      expect(c.host().posts.filter((p) => p.place === c.place)).toHaveLength(1);
    },
    120_000,
  );

  it('two processors of one conversation post the same summary', async () => {
    const id = await startFinishing(
      { kind: 'GitHostBV1CallbackProcessor', git_host_b_view_data: { project_id: 'acme/both', mr_iid: 4 } },
      [{ kind: 'ChatV1CallbackProcessor', chat_view_data: { channel_id: 'CBOTH', thread_ts: '1700000000.000200' } }],
    );
    await eventually(
      async () =>
        (await results(id)).filter((r) => r.status === 'ok' && r.actions.includes('comment-posted')).length === 2,
      { timeoutMs: 60_000, intervalMs: 200, what: 'both posted' },
    );
    const [note] = gitB.posts.filter((p) => p.place === 'acme/both!4');
    const [reply] = chat.posts.filter((p) => p.place === 'CBOTH/1700000000.000200');
    expect(note!.body.body.split('\n\n<!--')[0]).toBe(reply!.body.text);
    expect(reply!.body.text).toBe(`The agent finished:\n\n${SUMMARY}`);
  }, 90_000);

  it('should_request_summary false posts nothing', async () => {
    const before = gitB.posts.length;
    const id = await startFinishing({
      kind: 'GitHostBV1CallbackProcessor',
      git_host_b_view_data: { project_id: 'acme/quiet', mr_iid: 1 },
      should_request_summary: false,
    });
    await eventually(
      async () =>
        (
          await t.request(
            'GET',
            `/api/v1/conversation/${id}/events/search?kind__eq=ConversationStateUpdateEvent&limit=100`,
            { key: user.key },
          )
        ).body.items.some((e: any) => e.value === 'finished'),
      {
        timeoutMs: 30_000,
        what: 'the agent finished',
      },
    );
    await sleep(2000);
    expect(gitB.posts.length).toBe(before);
    expect((await results(id)).filter((r) => r.processor_index === 0)).toEqual([]);
  }, 60_000);

  it('no credential of any host is in a round record of the posting cases', async () => {
    await expectNoCredentialRecorded(t);
  });
});
