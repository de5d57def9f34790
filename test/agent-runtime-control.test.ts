/**
 * Controlling a running agent in the runtime, through the control plane (a sandbox started through the
 * api, a scripted LLM on loopback, events read back from the log): pause between steps, interrupt of a
 * slow LLM call and of a PreToolUse hook, confirmation mode (accept, reject) and a hook that blocks an action.
 */
import fs from 'node:fs';
import path from 'node:path';
import { settledLog, runtimeCall, startAgentConversation, states, steps, waitForExecution } from './helpers/agent';
import { eventually } from './helpers/eventually';
import { rt, t, user, useRuntimeUnderTest, workspace } from './helpers/runtime-under-test';
import { setTimeout as sleep } from 'node:timers/promises';

describe('agent runtime through the control plane', () => {
  useRuntimeUnderTest('agent-control-');

  it('pause takes effect between steps: the step in flight ends, then PAUSED; run goes on', async () => {
    const c = await startAgentConversation(t, user, rt, [
      { tool_calls: [{ name: 'terminal', arguments: { command: 'sleep 1; echo slept' } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    await sleep(300);
    const paused = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/pause`);
    expect(paused.status).toBe(200);
    await waitForExecution(c, 'paused');
    let log = await settledLog(t, user.key, c);
    expect(steps(log)).toEqual(['SystemPromptEvent', 'MessageEvent', 'ActionEvent', 'PauseEvent', 'ObservationEvent']);
    expect(log.find((e) => e.kind === 'ObservationEvent').observation.content[0].text).toContain('slept');
    expect(c.llm.requests).toHaveLength(1);
    expect((await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/run`)).status).toBe(200);
    await waitForExecution(c, 'finished');
    log = await settledLog(t, user.key, c);
    expect(states(log)).toEqual(['idle', 'running', 'paused', 'running', 'finished']);
    await c.llm.close();
  });

  it('interrupt cancels a slow LLM call at once, then PAUSED', async () => {
    const c = await startAgentConversation(t, user, rt, [
      { content: 'too late', delay_ms: 30_000 },
      { content: 'Back again.' },
    ]);
    await waitForExecution(c, 'running');
    await eventually(() => c.llm.requests.length > 0, { what: 'an LLM request', timeoutMs: 60_000, intervalMs: 20 }); // the test's own bound
    const started = Date.now();
    expect((await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/interrupt`)).status).toBe(200);
    await waitForExecution(c, 'paused', 5000);
    expect(Date.now() - started).toBeLessThan(5000);
    let log = await settledLog(t, user.key, c);
    expect(steps(log)).toEqual(['SystemPromptEvent', 'MessageEvent', 'InterruptEvent']);
    expect(states(log)).toEqual(['idle', 'running', 'paused']);
    // Resumable later: a new message runs it again.
    expect(
      (await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, { content: [{ text: 'Go on.' }] })).status,
    ).toBe(200);
    await waitForExecution(c, 'finished');
    log = await settledLog(t, user.key, c);
    expect(log.at(-2)).toMatchObject({
      kind: 'MessageEvent',
      source: 'agent',
      llm_message: { content: [{ text: 'Back again.' }] },
    });
    await c.llm.close();
  });

  it('interrupt during a PreToolUse hook stops the hook and the action never runs', async () => {
    const c = await startAgentConversation(
      t,
      user,
      rt,
      [{ tool_calls: [{ name: 'terminal', arguments: { command: 'touch after-hook.txt' } }] }],
      { hooks: { PreToolUse: [{ command: 'sleep 20' }] } },
    );
    await waitForExecution(c, 'running');
    await eventually(() => c.llm.requests.length > 0, { what: 'an LLM request', timeoutMs: 60_000, intervalMs: 20 }); // the test's own bound
    await sleep(300); // the hook is sleeping now
    const started = Date.now();
    expect((await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/interrupt`)).status).toBe(200);
    await waitForExecution(c, 'paused', 5000);
    expect(Date.now() - started).toBeLessThan(5000);
    const log = await settledLog(t, user.key, c);
    expect(fs.existsSync(path.join(workspace, 'after-hook.txt'))).toBe(false);
    expect(steps(log).slice(-3)).toEqual(['InterruptEvent', 'HookExecutionEvent', 'UserRejectObservation']);
    expect(log.find((e) => e.kind === 'UserRejectObservation').rejection_reason).toMatch(/interrupted/);
    await c.llm.close();
  });

  it('confirmation mode: an accepted action runs, a rejected one does not and gives UserRejectObservation (user)', async () => {
    const c = await startAgentConversation(
      t,
      user,
      rt,
      [
        { tool_calls: [{ name: 'terminal', arguments: { command: 'touch confirmed.txt' } }] },
        { tool_calls: [{ name: 'terminal', arguments: { command: 'touch rejected.txt' } }] },
      ],
      { confirmation_mode: true },
    );
    const info = await waitForExecution(c, 'waiting_for_confirmation');
    expect(info.pending_actions).toHaveLength(1);
    expect(fs.existsSync(path.join(workspace, 'confirmed.txt'))).toBe(false);
    expect((await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/run`)).status).toBe(409);
    expect(
      (await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events/respond_to_confirmation`, { accept: true }))
        .status,
    ).toBe(200);
    await waitForExecution(c, 'waiting_for_confirmation');
    expect(fs.existsSync(path.join(workspace, 'confirmed.txt'))).toBe(true);
    const rejected = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events/respond_to_confirmation`, {
      accept: false,
      reason: 'Not that file.',
    });
    expect(rejected.status).toBe(200);
    expect(rejected.body.execution_status).toBe('idle');
    const log = await settledLog(t, user.key, c);
    expect(fs.existsSync(path.join(workspace, 'rejected.txt'))).toBe(false);
    const reject = log.find((e) => e.kind === 'UserRejectObservation');
    const lastAction = log.filter((e) => e.kind === 'ActionEvent').at(-1);
    expect(reject).toMatchObject({
      source: 'environment',
      rejection_source: 'user',
      rejection_reason: 'Not that file.',
      action_id: lastAction.id,
      tool_name: 'terminal',
    });
    expect(states(log)).toEqual([
      'idle',
      'running',
      'waiting_for_confirmation',
      'running',
      'waiting_for_confirmation',
      'idle',
    ]);
    await c.llm.close();
  });

  it('a PreToolUse hook that exits 2 blocks the action: HookExecutionEvent (blocked), then UserRejectObservation (hook)', async () => {
    const c = await startAgentConversation(
      t,
      user,
      rt,
      [
        { tool_calls: [{ name: 'terminal', arguments: { command: 'touch hooked.txt' } }] },
        { tool_calls: [{ name: 'think', arguments: { thought: 'blocked; try something else' } }] },
        { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
      ],
      {
        secrets: { DEPLOY_TOKEN: 'tok-very-secret-123' },
        hooks: {
          PreToolUse: [
            {
              matcher: 'terminal',
              command: 'cat >/dev/null; echo "terminal is not allowed here (token $DEPLOY_TOKEN)" >&2; exit 2',
            },
          ],
        },
      },
    );
    await waitForExecution(c, 'finished');
    const log = await settledLog(t, user.key, c);
    expect(fs.existsSync(path.join(workspace, 'hooked.txt'))).toBe(false);
    const hook = log.filter((e) => e.kind === 'HookExecutionEvent');
    expect(hook).toHaveLength(1); // the matcher leaves think and finish alone
    const action = log.find((e) => e.kind === 'ActionEvent');
    expect(hook[0]).toMatchObject({
      source: 'hook',
      hook_event_type: 'PreToolUse',
      tool_name: 'terminal',
      blocked: true,
      exit_code: 2,
      success: true,
      action_id: action.id,
    });
    expect(hook[0].hook_input).toMatchObject({
      hook_event_name: 'PreToolUse',
      tool_name: 'terminal',
      tool_input: { command: 'touch hooked.txt' },
    });
    const reject = log.find((e) => e.kind === 'UserRejectObservation');
    expect(reject).toMatchObject({
      rejection_source: 'hook',
      rejection_reason: 'terminal is not allowed here (token <secret-hidden>)',
      action_id: action.id,
    });
    expect(JSON.stringify(log)).not.toContain('tok-very-secret-123'); // the hook's output is masked like a tool's
    expect(JSON.stringify(c.llm.requests)).not.toContain('tok-very-secret-123');
    expect(steps(log).indexOf('HookExecutionEvent')).toBeLessThan(steps(log).indexOf('UserRejectObservation'));
    await c.llm.close();
  });
});
