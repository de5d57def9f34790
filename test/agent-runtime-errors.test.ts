/**
 * The agent runtime's errors, through the control plane (a sandbox started through the api, a scripted LLM
 * on loopback, events read back from the log): its API's 404/409/422/401 answers, bad tool arguments and
 * unknown tools (AgentErrorEvent), a tool that fails, a command output too large for an event, a failing
 * LLM (ConversationErrorEvent, ERROR) and max_iterations.
 */
import fs from 'node:fs';
import path from 'node:path';
import { settledLog, runtimeCall, startAgentConversation, states, steps, waitForExecution } from './helpers/agent';
import { rt, t, user, useRuntimeUnderTest, workspace } from './helpers/runtime-under-test';

describe('agent runtime through the control plane', () => {
  useRuntimeUnderTest('agent-errors-');

  it('answers 404 for an unknown conversation, 409 for a conflicting call, 422 for a bad body, 401 without the key', async () => {
    const c = await startAgentConversation(t, user, rt, [{ content: 'slow', delay_ms: 2000 }]);
    expect(c.created.status).toBe(201);
    expect((await runtimeCall(rt, 'GET', '/api/conversations/nope')).status).toBe(404);
    expect((await runtimeCall(rt, 'POST', '/api/conversations/nope/run')).status).toBe(404);
    const again = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/run`);
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/already running/);
    const confirm = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events/respond_to_confirmation`, {
      accept: true,
    });
    expect(confirm.status).toBe(409);
    const dup = await runtimeCall(rt, 'POST', '/api/conversations', {
      conversation_id: c.id,
      agent: { llm: { model: 'm', base_url: c.llm.url } },
    });
    expect(dup.status).toBe(409);
    const bad = await runtimeCall(rt, 'POST', '/api/conversations', {
      agent: { llm: { model: '', base_url: 'not a url' } },
      max_iterations: 0,
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc.join('.'))).toEqual(
      expect.arrayContaining(['body.agent.llm.model', 'body.agent.llm.base_url', 'body.max_iterations']),
    );
    expect((await runtimeCall(rt, 'GET', `/api/conversations/${c.id}`, undefined, '')).status).toBe(401);
    await waitForExecution(c, 'finished');
    const after = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/pause`);
    expect(after.status).toBe(409);
    await c.llm.close();
  });

  it('bad tool arguments and unknown tools give AgentErrorEvent, a tool that fails observes its error, and the loop goes on', async () => {
    fs.writeFileSync(path.join(workspace, 'plain.txt'), 'a file, not a directory\n');
    const c = await startAgentConversation(t, user, rt, [
      {
        tool_calls: [
          { name: 'think', arguments: { thought: 'first' } },
          { name: 'file_editor', arguments: { command: 'explode', path: 'x' } },
          { name: 'fly', arguments: {} },
          { name: 'think', arguments: { thought: 'between' } },
          { name: 'terminal', arguments: '{not json' },
          { name: 'file_editor', arguments: { command: 'view', path: 'plain.txt/inside' } },
        ],
      },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    await waitForExecution(c, 'finished');
    const log = await settledLog(t, user.key, c);
    const errors = log.filter((e) => e.kind === 'AgentErrorEvent');
    expect(errors.map((e) => e.tool_name)).toEqual(['file_editor', 'fly', 'terminal']);
    expect(errors[0].error).toMatch(/Invalid arguments for file_editor: command/);
    expect(errors[1].error).toMatch(/Unknown tool "fly"/);
    expect(errors[2].error).toMatch(/not valid JSON/);
    const actions = log.filter((e) => e.kind === 'ActionEvent');
    expect(actions.slice(0, 6).map((a) => a.action?.kind ?? null)).toEqual([
      'ThinkAction',
      null,
      null,
      'ThinkAction',
      null,
      'FileEditorAction',
    ]);
    // Every call of the answer is recorded before any result, so the LLM gets one assistant message with six calls.
    expect(steps(log).slice(2, 8)).toEqual(Array(6).fill('ActionEvent'));
    const failed = log.find((e) => e.kind === 'ObservationEvent' && e.tool_name === 'file_editor');
    expect(failed.observation).toMatchObject({ is_error: true });
    expect(failed.observation.content[0].text).toMatch(/file_editor tool failed: ENOTDIR/);
    // The LLM was told about each error and went on.
    const messages = c.llm.requests[1]!.body.messages as any[];
    expect(messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'tool',
      'tool',
      'tool',
      'tool',
    ]);
    expect(messages[2].tool_calls).toHaveLength(6);
    expect(new Set(messages.slice(3).map((m) => m.tool_call_id))).toEqual(
      new Set(messages[2].tool_calls.map((tc: any) => tc.id)),
    );
    expect(messages.filter((m) => m.role === 'tool' && m.content.startsWith('Error: ')).map((m) => m.content)).toEqual([
      expect.stringMatching(/^Error: Invalid arguments/),
      expect.stringMatching(/^Error: Unknown tool/),
      expect.stringMatching(/^Error: The arguments/),
    ]);
    expect(states(log)).toEqual(['idle', 'running', 'finished']);
    await c.llm.close();
  });

  it('a huge command output is cut to fit an event, and still reaches the log', async () => {
    // NUL bytes take six characters each in JSON: 1 MiB of them would be a 6 MiB event, over the api's body limit.
    const c = await startAgentConversation(t, user, rt, [
      { tool_calls: [{ name: 'terminal', arguments: { command: 'head -c 1000000 /dev/zero' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    await waitForExecution(c, 'finished');
    const log = await settledLog(t, user.key, c);
    const observation = log.find((e) => e.kind === 'ObservationEvent' && e.tool_name === 'terminal');
    expect(observation.observation.content[0].text).toMatch(/characters left out: the event was too large/);
    expect(Buffer.byteLength(JSON.stringify(observation))).toBeLessThanOrEqual(1024 * 1024);
    await c.llm.close();
  });

  it('an unexpected failure of the loop gives ConversationErrorEvent and ERROR', async () => {
    const c = await startAgentConversation(t, user, rt, [{ status: 500 }]);
    await waitForExecution(c, 'error');
    const log = await settledLog(t, user.key, c);
    const error = log.find((e) => e.kind === 'ConversationErrorEvent');
    expect(error).toMatchObject({ source: 'environment', code: 'LlmError' });
    expect(error.detail).toMatch(/500/);
    expect(states(log)).toEqual(['idle', 'running', 'error']);
    await c.llm.close();
  });

  it('stops at max_iterations with a ConversationErrorEvent that says so', async () => {
    const think = { tool_calls: [{ name: 'think', arguments: { thought: 'hmm' } }] };
    const c = await startAgentConversation(t, user, rt, [think, think, think, think], { max_iterations: 2 });
    await waitForExecution(c, 'error');
    const log = await settledLog(t, user.key, c);
    expect(log.filter((e) => e.kind === 'ActionEvent')).toHaveLength(2);
    expect(log.find((e) => e.kind === 'ConversationErrorEvent')).toMatchObject({ code: 'MaxIterationsReached' });
    await c.llm.close();
  });
});
