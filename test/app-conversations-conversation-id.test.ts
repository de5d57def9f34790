/**
 * A start's conversation_id, end to end: the same id sent twice joins the first start (one task, one
 * conversation, not run again after READY; another user cannot take it); the id of a conversation no start
 * made is a 409 and nothing starts; the start's conversation step never takes over a conversation that
 * appeared after the api's check.
 */
import { randomUUID } from 'node:crypto';
import { startTaskWorkflowId, WORKFLOW_TYPES, type StartTaskWorkflowInput } from '../src/temporal/shared';
import { echoRequest, StartRequestSchema } from '../src/schemas/app-conversations';
import {
  llm,
  service,
  STATUSES,
  streamStart,
  t,
  useAppConversationStarts,
  user,
} from './helpers/app-conversation-starts';
import { sample } from './helpers/event-samples';
import { acceptedTaskRecord } from './helpers/start-tasks';
import { setTimeout as sleep } from 'node:timers/promises';

describe('app conversation starts', () => {
  useAppConversationStarts();

  it('the same conversation_id sent twice joins the first start: one task, one conversation', async () => {
    llm.load([{ content: 'Nothing to do.' }]);
    const conversationId = randomUUID();
    const [a, b] = await Promise.all([
      t.request('POST', '/api/v1/app-conversations', { key: user.key, body: { conversation_id: conversationId } }),
      t.request('POST', '/api/v1/app-conversations', { key: user.key, body: { conversation_id: conversationId } }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.id).toBe(conversationId);
    expect(b.body.id).toBe(conversationId);
    const joined = await streamStart({ conversation_id: conversationId });
    expect(joined.body.at(-1)).toMatchObject({ id: conversationId, status: 'READY' });
    expect(await t.database.db.collection('app_conversations').countDocuments({ _id: conversationId as any })).toBe(1);
    expect(await t.database.db.collection('start_tasks').countDocuments({ conversation_id: conversationId })).toBe(1);
    // Sent again after READY: the same task, not run a second time (no new sandbox, no new status).
    const sandboxesBefore = await t.database.db
      .collection('sandboxes')
      .countDocuments({ created_by_user_id: user.userId });
    const resent = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: conversationId, title: 'another' },
    });
    expect(resent.body).toMatchObject({ id: conversationId, status: 'READY' });
    await sleep(500);
    expect(
      (await t.database.db.collection('start_tasks').findOne({ _id: conversationId as any }))!.history,
    ).toHaveLength(8);
    expect(await t.database.db.collection('sandboxes').countDocuments({ created_by_user_id: user.userId })).toBe(
      sandboxesBefore,
    );
    // Another user cannot take the id.
    const other = await t.newUser();
    expect(
      (
        await t.request('POST', '/api/v1/app-conversations', {
          key: other.key,
          body: { conversation_id: conversationId },
        })
      ).status,
    ).toBe(409);
  }, 60_000);

  it("a conversation_id of a conversation no start made (another user's, or the caller's own) is 409: nothing starts and the conversation stays its owner's", async () => {
    // Conversations as the demo makes them: ConversationsStore.create, no start task.
    const other = await t.newUser();
    const theirs = await t.newConversation(other.userId);
    const mine = await t.newConversation(user.userId);
    const storedBefore = await t.database.db
      .collection('conversations')
      .find({ _id: { $in: [theirs.conversationId, mine.conversationId] as any[] } })
      .toArray();

    const streamed = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { conversation_id: theirs.conversationId },
    });
    expect(streamed.status).toBe(409);
    expect(streamed.body).toEqual({ detail: `conversation_id ${theirs.conversationId} is already in use` });
    const posted = await t.request('POST', '/api/v1/app-conversations', {
      key: user.key,
      body: { conversation_id: theirs.conversationId },
    });
    expect(posted.status).toBe(409);
    const own = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { conversation_id: mine.conversationId },
    });
    expect(own.status).toBe(409);
    expect(own.body.detail).toMatch(/not made by a start; send another conversation_id, or none/);

    await sleep(300);
    expect(
      await t.database.db
        .collection('start_tasks')
        .countDocuments({ _id: { $in: [theirs.conversationId, mine.conversationId] as any[] } }),
    ).toBe(0);
    const storedAfter = await t.database.db
      .collection('conversations')
      .find({ _id: { $in: [theirs.conversationId, mine.conversationId] as any[] } })
      .toArray();
    expect(storedAfter).toEqual(storedBefore);
    // The other user's runtime still reports its events with its own session key.
    expect((await t.ingest(theirs.conversationId, theirs.sessionKey, [sample('PauseEvent')])).status).toBe(200);
  });

  it("the start's conversation step never takes over a conversation that appeared after the api's check: ERROR, the conversation untouched", async () => {
    // The race the api's check cannot close: the task record is accepted (as the api writes it), then
    // another user's conversation takes the id, then the workflow runs.
    const other = await t.newUser();
    const id = randomUUID();
    const request = StartRequestSchema.parse({ conversation_id: id });
    const echoed = echoRequest(request) as Record<string, unknown>;
    await t.stores.startTasks.create(acceptedTaskRecord(user.userId, id, request), null);
    const theirs = await t.conversations.create({ id, userId: other.userId, sessionApiKey: 'their-session-key-1234' });
    const client = await service.temporal();
    const input: StartTaskWorkflowInput = {
      taskId: id,
      userId: user.userId,
      request: echoed,
      settings: {
        sandboxWaitMs: t.config.starts.sandboxWaitMs,
        setupScriptTimeoutMs: t.config.starts.setupScriptTimeoutMs,
      },
    };
    await client.workflow.start(WORKFLOW_TYPES.startTask, {
      workflowId: startTaskWorkflowId(id),
      taskQueue: t.config.temporal.taskQueue,
      args: [input],
    });
    const joined = await streamStart({ conversation_id: id });
    expect(joined.body.map((s: any) => s.status)).toEqual([...STATUSES, 'ERROR']);
    expect(joined.body.at(-1).detail).toMatch(
      new RegExp(`Conversation ${id} already exists and was not made by this start`),
    );
    expect(await t.conversations.get(id)).toEqual(theirs);
    expect(await t.conversations.sessionKeyMatches(id, 'their-session-key-1234')).toBe(true);
    expect(await t.database.db.collection('app_conversations').countDocuments({ _id: id as any })).toBe(0);
  }, 60_000);
});
