/**
 * A start's callback processors, end to end (the api, a real worker, a process sandbox, the scripted LLM
 * and a loopback stand-in of git host A): on ingested events a title is set and the agent's summary is
 * posted once with the stored provider token, through a failing host and a lost record of the post; a
 * host that refuses is recorded once, not retried forever.
 */
import { callbacksWorkflowId, startTaskWorkflowId } from '../src/temporal/shared';
import { loggedEvents, states } from './helpers/agent';
import {
  gitHost,
  llm,
  streamStart,
  t,
  useAppConversationStarts,
  user,
  workflowsMatching,
} from './helpers/app-conversation-starts';
import { eventually } from './helpers/eventually';
import { setTimeout as sleep } from 'node:timers/promises';

describe('app conversation starts', () => {
  useAppConversationStarts();

  /** Retries `check` until it answers something truthy: that value. */
  const found = <T>(check: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> =>
    eventually(
      async () => {
        const v = await check();
        if (!v) throw new Error(`timed out waiting for ${what}`);
        return v;
      },
      { timeoutMs, intervalMs: 100 },
    );
  const results = (conversationId: string) =>
    t.database.db
      .collection('callback_results')
      .find({ conversation_id: conversationId })
      .sort({ processor_index: 1, to_seq: 1 })
      .toArray();

  it('callback processors run on ingested events: a title is set, a failing git host is retried until the summary comment is posted once', async () => {
    gitHost.failNext = 2;
    // The processor posts with the stored provider token, never with one that came in the start's request.
    expect(
      (
        await t.request('POST', '/api/v1/secrets/git-providers', {
          key: user.key,
          body: { provider_tokens: { git_host_a: { token: 'ghs-test-token' } } },
        })
      ).status,
    ).toBe(200);
    // The agent finishes, is asked for its summary (once, though the host fails twice), and later answers again.
    llm.load([
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
      { content: 'Fixed the flaky test in widgets.' },
      { content: 'Still fixed.' },
    ]);
    const started = await streamStart({
      initial_message: { content: [{ text: 'Fix the flaky test\nIt fails one run in ten.' }], run: true },
      processors: [
        { kind: 'GitHostAV1CallbackProcessor', git_host_a_view_data: { repo: 'acme/widgets', pr_number: 7 } },
        { kind: 'LoggingCallbackProcessor' },
      ],
      secrets: { GIT_HOST_A_TOKEN: 'ghs-from-the-request' },
    });
    const ready = started.body.at(-1);
    expect(ready.status).toBe('READY');
    const id = ready.app_conversation_id;

    const posted = await found(
      async () => gitHost.comments.find((c) => c.repo === 'acme/widgets'),
      'the summary comment',
    );
    expect(posted).toEqual({
      repo: 'acme/widgets',
      number: 7,
      body: expect.stringMatching(
        /^The agent finished:\n\nFixed the flaky test in widgets\.\n\n<!-- agent-control:conversation=/,
      ),
      authorization: 'Bearer ghs-test-token',
    });
    const app = await found(
      async () =>
        (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0]?.title
          ? (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0]
          : null,
      'the title',
    );
    expect(app.title).toBe('Fix the flaky test');
    const recorded = await found(async () => {
      const r = await results(id);
      return r.some(
        (x) => x.kind === 'GitHostAV1CallbackProcessor' && x.status === 'ok' && x.actions.includes('comment-posted'),
      )
        ? r
        : null;
    }, 'the recorded callback');
    const comment = recorded.find((x) => x.actions.includes('comment-posted'))!;
    expect(comment.attempts).toBe(3); // two 500s, then posted
    // The agent was asked for its summary once: the tries after a failed post reuse its answer.
    expect(
      llm.requests.filter((r) => JSON.stringify(r.body.messages?.at(-1) ?? null).includes('summarize your work')),
    ).toHaveLength(1);
    expect(recorded.filter((x) => x.kind === 'LoggingCallbackProcessor').every((x) => x.status === 'ok')).toBe(true);
    expect(recorded.map((x) => x.kind)).toContain('SetTitleCallbackProcessor'); // always registered
    // Its callbacks workflow and its start are found by the conversation.
    const byConversation = await workflowsMatching(`ConversationId = "${id}"`, 2);
    expect(byConversation.map((w) => w.workflowId).sort()).toEqual(
      [callbacksWorkflowId(id), startTaskWorkflowId(id)].sort(),
    );

    // The agent finishes again, and the record of the first comment is gone (a crash right after the post):
    // the comment is not posted twice (its marker is found on the pull request).
    const rt = { url: ready.agent_server_url };
    const sandbox = (await t.request('GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`, { key: user.key })).body[0];
    const again = await fetch(`${rt.url}/api/conversations/${id}/events`, {
      method: 'POST',
      headers: { 'X-Session-API-Key': sandbox.session_api_key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ content: [{ text: 'Anything else?' }] }),
    });
    expect(again.status).toBe(200);
    await t.database.db
      .collection('callback_results')
      .deleteMany({ conversation_id: id, kind: 'GitHostAV1CallbackProcessor' });
    const logged = (await results(id)).filter((x) => x.kind === 'LoggingCallbackProcessor').length;
    await found(
      async () => (await results(id)).filter((x) => x.kind === 'LoggingCallbackProcessor').length > logged,
      'a second round',
    );
    await sleep(500);
    expect(gitHost.comments.filter((c) => c.repo === 'acme/widgets')).toHaveLength(1);
    await found(
      async () =>
        (await results(id)).some(
          (x) => x.kind === 'GitHostAV1CallbackProcessor' && x.actions.includes('comment-posted'),
        ),
      'the comment found again',
    );
  }, 90_000);

  it('a git host that refuses the comment: the failure is recorded, nothing is retried forever, the log is whole', async () => {
    gitHost.refuseWith = 403;
    try {
      llm.load([{ tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] }]);
      const started = await streamStart({
        initial_message: { content: [{ text: 'Do it' }], run: true },
        processors: [
          { kind: 'GitHostAV1CallbackProcessor', git_host_a_view_data: { repo: 'acme/refused', pr_number: 1 } },
        ],
      });
      const id = started.body.at(-1).app_conversation_id;
      const failed = await found(
        async () => (await results(id)).find((x) => x.kind === 'GitHostAV1CallbackProcessor' && x.status === 'failed'),
        'the recorded failure',
      );
      expect(failed.detail).toMatch(/^git host A refused the summary on acme\/refused#1 \(403\)/);
      expect(failed.attempts).toBe(1); // a refusal is not retried
      const log = await loggedEvents(t, user.key, id);
      expect(states(log).at(-1)).toBe('finished');
    } finally {
      gitHost.refuseWith = null;
    }
  }, 60_000);
});
