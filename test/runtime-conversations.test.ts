/**
 * The runtime's conversations as the control plane's new routes use them: deleting one, messages as the
 * published SendMessageRequest (roles, images, an id that makes delivery idempotent) and token and cost
 * metrics. A sandbox started through the api (real worker, real runtime process), a scripted LLM on
 * loopback, the events read back from the control plane's log; a restart is a runtime killed and resumed.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestApi } from './helpers/api';
import {
  conversationInfo,
  metricsUpdates,
  runtimeCall,
  settledLog,
  startAgentConversation,
  waitForExecution,
  type Runtime,
} from './helpers/agent';
import { eventually } from './helpers/eventually';
import { resumeKilledRuntime, startRuntimeUnderTest } from './helpers/runtime-under-test';
import { runtimeRootsUnder } from './helpers/sandboxes';
import type { ServiceUnderTest } from './helpers/service';
import { setTimeout as sleep } from 'node:timers/promises';

const IMAGE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('runtime conversations: delete, messages, metrics', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let dataDir: string;
  let user: { userId: string; key: string };
  let rt: Runtime;

  beforeAll(async () => {
    ({ service, user, rt } = await startRuntimeUnderTest('runtime-conversations-'));
    ({ t, dataDir } = service);
  });

  afterAll(async () => {
    await service?.close();
  });

  const stateDirOf = (id: string) =>
    path.join(dataDir, 'sandboxes', rt.sandboxId, 'conversations', Buffer.from(id).toString('base64url'));

  /** Kills the runtime (-9) and resumes the sandbox: a new runtime process reads its conversations back. */
  async function restartRuntime(): Promise<void> {
    const [pid] = runtimeRootsUnder(path.join(dataDir, 'sandboxes', rt.sandboxId));
    process.kill(pid!, 'SIGKILL');
    rt = await resumeKilledRuntime(t, user.key, rt.sandboxId);
  }

  it('DELETE answers 401 without the key, 404 for an unknown conversation, 422 for an id too long', async () => {
    const c = await startAgentConversation(t, user, rt, [], {}, null);
    expect(c.created.status).toBe(201);
    expect(await runtimeCall(rt, 'DELETE', `/api/conversations/${c.id}`, undefined, '')).toEqual({
      status: 401,
      body: { detail: 'Missing X-Session-API-Key header' },
    });
    expect(
      (await runtimeCall(rt, 'DELETE', `/api/conversations/${c.id}`, undefined, 'x'.repeat(rt.key.length))).status,
    ).toBe(401);
    expect((await conversationInfo(c)).id).toBe(c.id); // still there
    const unknown = await runtimeCall(rt, 'DELETE', '/api/conversations/no-such-conversation');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toContain('not found');
    const tooLong = await runtimeCall(rt, 'DELETE', `/api/conversations/${'x'.repeat(201)}`);
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail[0].loc).toEqual(['path', 'conversation_id']);
    expect(await runtimeCall(rt, 'DELETE', `/api/conversations/${c.id}`)).toEqual({
      status: 200,
      body: { success: true },
    });
    await c.llm.close();
  });

  it('deletes a running conversation: its loop stops at once, it is 404 from then on and its state directory is gone', async () => {
    const c = await startAgentConversation(t, user, rt, [{ content: 'too late', delay_ms: 30_000 }]);
    await eventually(async () => c.llm.requests.length === 1, {
      what: 'the LLM called',
      timeoutMs: 10_000,
      intervalMs: 25,
    });
    expect((await conversationInfo(c)).execution_status).toBe('running');
    expect(fs.existsSync(stateDirOf(c.id))).toBe(true);
    const t0 = Date.now();
    expect(await runtimeCall(rt, 'DELETE', `/api/conversations/${c.id}`)).toEqual({
      status: 200,
      body: { success: true },
    });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await runtimeCall(rt, 'GET', `/api/conversations/${c.id}`)).status).toBe(404);
    expect((await runtimeCall(rt, 'DELETE', `/api/conversations/${c.id}`)).status).toBe(404);
    expect(
      (await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, { content: [{ text: 'hello?' }] })).status,
    ).toBe(404);
    expect((await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/run`)).status).toBe(404);
    expect(fs.existsSync(stateDirOf(c.id))).toBe(false);
    await sleep(300);
    expect(c.llm.requests).toHaveLength(1); // nothing runs on
    expect(fs.existsSync(stateDirOf(c.id))).toBe(false); // and nothing wrote it back
    await c.llm.close();
  });

  it('takes messages of every role, with images: the LLM sees them as chat messages, the MessageEvent keeps them as sent, under their id', async () => {
    const first = { id: 'msg-first', content: [{ text: 'What is in this picture?' }, { image_urls: [IMAGE] }] };
    const c = await startAgentConversation(
      t,
      user,
      rt,
      [{ content: 'A dot.' }, { content: 'Noted.' }],
      { initial_message: first },
      null,
    );
    expect(c.created.status).toBe(201);
    await waitForExecution(c, 'finished');
    const seen = c.llm.requests[0]!.body.messages as any[];
    expect(seen.map((m) => m.role)).toEqual(['system', 'user']);
    expect(seen[1].content).toEqual([
      { type: 'text', text: 'What is in this picture?' },
      { type: 'image_url', image_url: { url: IMAGE } },
    ]);

    const send = (body: object) => runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, body);
    expect((await send({ role: 'system', content: [{ text: 'Answer in one word.' }], run: false })).status).toBe(200);
    expect(
      (await send({ role: 'assistant', content: [{ text: 'I will be brief.' }, { image_urls: [IMAGE] }], run: false }))
        .status,
    ).toBe(200);
    expect((await send({ id: 'msg-tool', role: 'tool', content: [{ text: 'exit code 0' }] })).status).toBe(200);
    await waitForExecution(c, 'finished');
    const second = c.llm.requests[1]!.body.messages as any[];
    expect(second.slice(2)).toEqual([
      { role: 'assistant', content: 'A dot.' },
      { role: 'system', content: 'Answer in one word.' },
      { role: 'assistant', content: 'I will be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The images sent with the assistant message above:' },
          { type: 'image_url', image_url: { url: IMAGE } },
        ],
      },
      { role: 'user', content: '[Tool output]\nexit code 0' },
    ]);

    const log = await settledLog(t, user.key, c);
    const sent = log.filter((e) => e.kind === 'MessageEvent' && e.source === 'user');
    expect(sent.map((e) => e.llm_message.role)).toEqual(['user', 'system', 'assistant', 'tool']);
    expect(sent[0]).toMatchObject({
      id: 'msg-first',
      llm_message: {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?', cache_prompt: false },
          { type: 'image', image_urls: [IMAGE], cache_prompt: false },
        ],
      },
    });
    expect(sent[3].id).toBe('msg-tool');
    await c.llm.close();
  });

  it('adds a message whose id the conversation holds only once: a second delivery answers 200 and changes nothing', async () => {
    const c = await startAgentConversation(
      t,
      user,
      rt,
      [{ content: 'One.' }, { content: 'Two.' }],
      { initial_message: { id: 'm-1', content: [{ text: 'Go.' }] } },
      null,
    );
    await waitForExecution(c, 'finished');
    const before = await conversationInfo(c);
    const again = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, {
      id: 'm-1',
      content: [{ text: 'Go.' }],
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: c.id, execution_status: 'finished', events: before.events });
    // Two deliveries at once: one message.
    const both = await Promise.all(
      [1, 2].map(() =>
        runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, { id: 'm-2', content: [{ text: 'Once more.' }] }),
      ),
    );
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    await waitForExecution(c, 'finished');
    const log = await settledLog(t, user.key, c);
    expect(log.filter((e) => e.kind === 'MessageEvent' && e.source === 'user').map((e) => e.id)).toEqual([
      'm-1',
      'm-2',
    ]);
    expect(c.llm.requests).toHaveLength(2);
    // The id of an event that is no message is refused.
    const taken = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, {
      id: log[0].id,
      content: [{ text: 'x' }],
    });
    expect(taken.status).toBe(409);
    expect(taken.body.detail).toContain('another event');
    await c.llm.close();
  });

  it('answers a malformed message with 422, and 401 without the key', async () => {
    const c = await startAgentConversation(t, user, rt, [], {}, null);
    for (const [body, loc] of [
      [{ role: 'robot', content: [{ text: 'x' }] }, ['body', 'role']],
      [{ content: [] }, ['body', 'content']],
      [{ content: [{ image_urls: [] }] }, ['body', 'content', 0]],
      [{ content: [{ text: 'x' }], id: '' }, ['body', 'id']],
      [{ content: [{ text: 'x' }], id: 'i'.repeat(201) }, ['body', 'id']],
      [{ content: [{ text: 'x' }], id: 'a\u0000b' }, ['body', 'id']],
      [{ content: [{ text: 'x' }], tool_call_id: 'c1' }, ['body', 'tool_call_id']],
    ] as const) {
      const r = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, body);
      expect(r.status).toBe(422);
      expect(r.body.detail[0].loc.slice(0, loc.length)).toEqual(loc);
    }
    const created = await runtimeCall(rt, 'POST', '/api/conversations', {
      agent: { llm: { model: 'm', base_url: c.llm.url } },
      initial_message: { role: 'robot', content: [{ text: 'x' }] },
    });
    expect(created.status).toBe(422);
    expect(
      (await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, { content: [{ text: 'x' }] }, '')).status,
    ).toBe(401);
    await c.llm.close();
  });

  it('adds up the tokens and cost of every completion: a metrics update after each, the totals in the info', async () => {
    const script = [
      { content: 'abc', tool_calls: [{ name: 'think', arguments: { thought: 'hm' } }] },
      {
        content: 'Done.',
        usage: {
          cost: 0.5,
          prompt_tokens_details: { cached_tokens: 3 },
          completion_tokens_details: { reasoning_tokens: 2 },
        },
      },
    ];
    const c = await startAgentConversation(t, user, rt, script, { llm: { stream: true } });
    await waitForExecution(c, 'finished');
    // The scripted LLM's usage: 10 prompt tokens per message sent, one completion token per character answered.
    // First call: system and user (20), 'abc' (3). Second: system, user, assistant, tool (40), 'Done.' (5).
    const expected = {
      model_name: 'scripted-model',
      accumulated_cost: 0.5,
      max_budget_per_task: null,
      accumulated_token_usage: {
        model: 'scripted-model',
        prompt_tokens: 60,
        completion_tokens: 8,
        cache_read_tokens: 3,
        cache_write_tokens: 0,
        reasoning_tokens: 2,
        context_window: 0,
        per_turn_token: 45,
        response_id: 'chatcmpl-scripted-2',
      },
    };
    expect((await conversationInfo(c)).metrics).toEqual(expected);
    const log = await settledLog(t, user.key, c);
    const updates = metricsUpdates(log);
    expect(updates).toHaveLength(2);
    expect(updates[0]).toMatchObject({
      accumulated_cost: 0,
      accumulated_token_usage: {
        prompt_tokens: 20,
        completion_tokens: 3,
        per_turn_token: 23,
        response_id: 'chatcmpl-scripted-1',
      },
    });
    expect(updates[1]).toEqual(expected);
    await c.llm.close();
  });

  it('after a runtime restart: the metrics are read back, a message id already held is still not added again, a deleted conversation stays gone', async () => {
    const kept = await startAgentConversation(
      t,
      user,
      rt,
      [{ content: 'Hello.' }, { content: 'Again.' }],
      { initial_message: { id: 'before-restart', content: [{ text: 'Hi.' }] } },
      null,
    );
    const gone = await startAgentConversation(t, user, rt, [{ content: 'Bye.' }]);
    await waitForExecution(kept, 'finished');
    await waitForExecution(gone, 'finished');
    await settledLog(t, user.key, kept);
    expect((await runtimeCall(rt, 'DELETE', `/api/conversations/${gone.id}`)).status).toBe(200);
    const before = await conversationInfo(kept);
    expect(before.metrics.accumulated_token_usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 6 });

    await restartRuntime();
    const keptNow = { ...kept, runtime: rt };
    const after = await conversationInfo(keptNow);
    expect(after).toMatchObject({ execution_status: 'finished', events: before.events, metrics: before.metrics });
    const again = await runtimeCall(rt, 'POST', `/api/conversations/${kept.id}/events`, {
      id: 'before-restart',
      content: [{ text: 'Hi.' }],
    });
    expect(again.status).toBe(200);
    expect(again.body.events).toBe(before.events);
    expect(kept.llm.requests).toHaveLength(1);
    expect((await runtimeCall(rt, 'GET', `/api/conversations/${gone.id}`)).status).toBe(404);
    expect((await runtimeCall(rt, 'DELETE', `/api/conversations/${gone.id}`)).status).toBe(404);

    // The totals go on from where they were.
    expect(
      (
        await runtimeCall(rt, 'POST', `/api/conversations/${kept.id}/events`, {
          id: 'after-restart',
          content: [{ text: 'More.' }],
        })
      ).status,
    ).toBe(200);
    await waitForExecution(keptNow, 'finished');
    const log = await settledLog(t, user.key, keptNow);
    // Second call: system, user, assistant, user (40), 'Again.' (6).
    expect((await conversationInfo(keptNow)).metrics.accumulated_token_usage).toMatchObject({
      prompt_tokens: 60,
      completion_tokens: 12,
      per_turn_token: 46,
    });
    expect(log.filter((e) => e.kind === 'MessageEvent' && e.source === 'user').map((e) => e.id)).toEqual([
      'before-restart',
      'after-restart',
    ]);
    await kept.llm.close();
    await gone.llm.close();
  });
});
