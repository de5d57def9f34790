/**
 * Deleting the runtime's conversations as the control plane's new routes use them: the answers without the
 * key, for an unknown conversation and an id too long; a running conversation deleted (its loop stops, its
 * state directory goes). A sandbox started through the api (real worker, real runtime process), a scripted
 * LLM on loopback. Messages: runtime-conversations-messages.test.ts; metrics: runtime-conversations-metrics.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { conversationInfo, runtimeCall, startAgentConversation } from './helpers/agent';
import { eventually } from './helpers/eventually';
import { dataDir, rt, t, user, useRuntimeUnderTest } from './helpers/runtime-under-test';
import { setTimeout as sleep } from 'node:timers/promises';

describe('runtime conversations: delete, messages, metrics', () => {
  useRuntimeUnderTest('runtime-conversations-');

  const stateDirOf = (id: string) =>
    path.join(dataDir, 'sandboxes', rt.sandboxId, 'conversations', Buffer.from(id).toString('base64url'));

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
});
