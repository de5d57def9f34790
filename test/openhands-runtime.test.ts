/**
 * What the real OpenHands agent server does not do that the control plane's adapter does for it: a
 * message is delivered once by its id (the server keeps no id on a message, so a redelivery after a lost
 * acknowledgement is dropped by the control plane). The rest of a conversation on it, on both runtimes and
 * both providers, is the contract suite (test/conversation-contract.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { startTaskWorkflowId } from '../src/temporal/shared';
import { createConversationServices, createSandboxService } from '../src/composition';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { loggedEvents, newUserWithLlm } from './helpers/agent';
import { type TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { startTaskEnded, waitForStartTask } from './helpers/start-tasks';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

describe('the real OpenHands agent server in a process sandbox: what its adapter adds', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    service = await startServiceUnderTest('openhands-', {
      DEFAULT_SANDBOX_SPEC_ID: 'local-process-openhands',
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      SANDBOX_START_TIMEOUT_MS: '120000',
      SANDBOX_HEALTH_INTERVAL_MS: '2000',
    });
    t = service.t;
    llm = await new ScriptedLlm([]).start();
    user = await newUserWithLlm(t, llm);
  });

  afterAll(async () => {
    await service?.close();
    await llm?.close();
  });

  /** Starts a conversation and waits until it is READY. */
  const startReady = async (body: object) => {
    const accepted = await t.request('POST', '/api/v1/app-conversations', { key: user.key, body });
    const ready = await waitForStartTask(t, user.key, accepted.body.id, startTaskEnded, 180_000);
    expect(ready.status).toBe('READY');
    return { accepted, id: ready.app_conversation_id as string };
  };

  it('delivers a queued message once by its id: a retry after a lost acknowledgement is not sent again (the server has no id on a message)', async () => {
    const { accepted, id } = await startReady({});
    // The worker's own composition of the conversation service, as the pending-message activity uses it.
    const temporal = await service.temporal();
    // The start has settled its own queued messages (none) and ended: the message below is this test's alone.
    await temporal.workflow.getHandle(startTaskWorkflowId(accepted.body.id)).result();
    const sandboxService = createSandboxService(t.stores, {
      box: t.box,
      temporal,
      taskQueue: t.config.temporal.taskQueue,
      sandboxes: t.config.sandboxes,
    });
    const { conversationService } = createConversationServices(t.stores, {
      box: t.box,
      temporal,
      sandboxService,
      sandboxWaitMs: 60_000,
    });
    const c = (await t.stores.appConversations.get(id))!;
    const messageId = randomUUID();
    await t.stores.pendingMessages.add({
      id: messageId,
      conversation_id: id,
      created_by_user_id: user.userId,
      role: 'user',
      content: [{ type: 'text', text: 'Once only' }],
    });
    const message = {
      id: messageId,
      role: 'user' as const,
      content: [{ type: 'text' as const, text: 'Once only', cache_prompt: false }],
      run: false,
    };
    const userMessages = async () =>
      (await loggedEvents(t, user.key, id)).filter((e) => e.kind === 'MessageEvent' && e.source === 'user').length;
    const before = await userMessages();
    expect(await conversationService.deliver(user.userId, c, message)).toMatchObject({
      success: true,
      message: null,
    });
    // The worker dies before it marks the message DELIVERED: the activity runs again.
    const again = await conversationService.deliver(user.userId, c, message);
    expect(again).toMatchObject({ success: true, message: expect.stringContaining('delivered before') });
    await eventually(async () => expect(await userMessages()).toBe(before + 1), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    // Another message (another id) goes through.
    const next = {
      ...message,
      id: randomUUID(),
      content: [{ type: 'text' as const, text: 'And this', cache_prompt: false }],
    };
    await t.stores.pendingMessages.add({
      id: next.id,
      conversation_id: id,
      created_by_user_id: user.userId,
      role: 'user',
      content: next.content,
    });
    expect(await conversationService.deliver(user.userId, c, next)).toMatchObject({ success: true, message: null });
    await eventually(async () => expect(await userMessages()).toBe(before + 2), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
  }, 300_000);

  it("switch_profile hands a saved profile's LLM to the server's switch_llm: the next step calls it with its key, the history along", async () => {
    const switched = await new ScriptedLlm([{ content: 'answered by the switched LLM' }]).start();
    try {
      const saved = await t.request('POST', '/api/v1/settings/profiles/other-llm', {
        key: user.key,
        body: { llm: { model: 'switch-model', base_url: switched.url, api_key: 'sk-switched-0123' } },
      });
      expect(saved.status).toBe(201);
      llm.load([{ content: 'answered by the first LLM' }]);
      const { id } = await startReady({
        initial_message: { content: [{ type: 'text', text: 'First question' }], run: true },
      });
      await eventually(
        async () => expect(JSON.stringify(await loggedEvents(t, user.key, id))).toContain('answered by the first LLM'),
        { timeoutMs: 60_000, intervalMs: 250 },
      );

      const r = await t.request('POST', `/api/v1/app-conversations/${id}/switch_profile`, {
        key: user.key,
        body: { profile_name: 'other-llm' },
      });
      expect(r).toMatchObject({ status: 200, body: { success: true } });
      const firstCalls = llm.requests.length;
      expect(
        (
          await t.request('POST', `/api/v1/app-conversations/${id}/send-message`, {
            key: user.key,
            body: { content: [{ text: 'Second question' }] },
          })
        ).status,
      ).toBe(200);
      await eventually(
        async () =>
          expect(JSON.stringify(await loggedEvents(t, user.key, id))).toContain('answered by the switched LLM'),
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(switched.requests[0]).toMatchObject({
        authorization: 'Bearer sk-switched-0123',
        body: { model: expect.stringContaining('switch-model') },
      });
      expect(llm.requests.length).toBe(firstCalls);
      const sent = JSON.stringify(switched.requests[0]!.body.messages);
      expect(sent).toContain('First question');
      expect(sent).toContain('Second question');
      const view = (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body[0];
      expect(view).toMatchObject({ llm_model: 'switch-model', launched_agent_profile: null });
    } finally {
      await switched.close();
    }
  }, 300_000);
});
