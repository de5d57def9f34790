/**
 * Messages to the runtime's conversations as the published SendMessageRequest: every role, with images
 * (as the LLM sees them, as the MessageEvent keeps them), an id that makes delivery idempotent, and the
 * 422/401 answers to malformed ones. A sandbox started through the api (real worker, real runtime process),
 * a scripted LLM on loopback, the events read back from the control plane's log.
 */
import { conversationInfo, runtimeCall, settledLog, startAgentConversation, waitForExecution } from './helpers/agent';
import { rt, t, user, useRuntimeUnderTest } from './helpers/runtime-under-test';

const IMAGE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('runtime conversations: delete, messages, metrics', () => {
  useRuntimeUnderTest('runtime-messages-');

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
});
