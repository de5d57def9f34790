/**
 * The agent runtime end to end: a sandbox started through the api (real worker, real runtime process),
 * conversations created in that runtime against a scripted LLM on loopback, and their events read back
 * from the control plane's log and websocket.
 */
import fs from 'node:fs';
import pino from 'pino';
import { startApiServer } from '../src/api/server';
import path from 'node:path';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import type { TestApi } from './helpers/api';
import {
  settledLog,
  loggedEvents,
  kinds,
  runtimeCall,
  startAgentConversation,
  states,
  steps,
  waitForExecution,
  conversationInfo,
  type Runtime,
} from './helpers/agent';
import { TEST_SECRETS_KEY } from './helpers/env';
import { eventually } from './helpers/eventually';
import { distPath, runNode } from './helpers/run';
import { resumeKilledRuntime, startRuntimeUnderTest } from './helpers/runtime-under-test';
import { runtimeRootsUnder } from './helpers/sandboxes';
import type { ServiceUnderTest } from './helpers/service';
import { connect } from './helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

describe('agent runtime through the control plane', () => {
  let t: TestApi;
  let service: ServiceUnderTest;
  let dataDir: string;
  let user: { userId: string; key: string };
  let rt: Runtime;
  let workspace: string;

  beforeAll(async () => {
    ({ service, user, rt } = await startRuntimeUnderTest('agent-'));
    ({ t, dataDir } = service);
    workspace = path.join(dataDir, 'sandboxes', rt.sandboxId, 'workspace');
  });

  afterAll(async () => {
    await service?.close();
  });

  it('runs a scripted conversation that lists files, edits one and finishes: events in order in the log and on the websocket', async () => {
    fs.mkdirSync(path.join(workspace, 'demo'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'demo', 'greeting.txt'), 'hello world\n');
    const script = [
      {
        content: 'Let me look around first.',
        tool_calls: [{ name: 'terminal', arguments: { command: 'ls demo' } }],
        prompt_token_ids: [1, 2, 3],
        response_token_ids: [4, 5],
      },
      {
        content: 'I will change the greeting and note it.',
        tool_calls: [
          {
            name: 'file_editor',
            arguments: { command: 'str_replace', path: 'demo/greeting.txt', old_str: 'world', new_str: 'agents' },
          },
          { name: 'think', arguments: { thought: 'The greeting is updated.' } },
        ],
      },
      { tool_calls: [{ name: 'finish', arguments: { message: 'The greeting now says hello agents.' } }] },
    ];
    // The control-plane record exists first, so a websocket subscriber sees the whole conversation live.
    const c0 = await t.conversations.create({ userId: user.userId, sandboxId: rt.sandboxId, sessionApiKey: rt.key });
    const socket = connect(`${t.url.replace('http', 'ws')}/api/v1/conversation/${c0.id}/events/socket`, {
      'X-Access-Token': user.key,
    });
    await socket.opened;
    const llm = await new ScriptedLlm(script).start();
    const created = await runtimeCall(rt, 'POST', '/api/conversations', {
      conversation_id: c0.id,
      agent: {
        llm: { model: 'scripted-model', base_url: llm.url, api_key: 'sk-test', stream: true, log_completions: true },
      },
      initial_message: { content: [{ text: 'Change the greeting in demo/greeting.txt to hello agents.' }], run: true },
    });
    expect(created.status).toBe(201);
    const c = { id: c0.id, llm, runtime: rt };
    await waitForExecution(c, 'finished');
    const log = await settledLog(t, user.key, c);

    expect(steps(log)).toEqual([
      'SystemPromptEvent',
      'MessageEvent',
      'TokenEvent',
      'LLMCompletionLogEvent',
      'ActionEvent',
      'ObservationEvent',
      'LLMCompletionLogEvent',
      'ActionEvent',
      'ActionEvent',
      'ObservationEvent',
      'ObservationEvent',
      'LLMCompletionLogEvent',
      'ActionEvent',
      'ObservationEvent',
    ]);
    expect(states(log)).toEqual(['idle', 'running', 'finished']);
    expect(fs.readFileSync(path.join(workspace, 'demo', 'greeting.txt'), 'utf8')).toBe('hello agents\n');

    const [system, message] = log.filter((e) => e.kind === 'SystemPromptEvent' || e.kind === 'MessageEvent');
    expect(system.tools.map((d: any) => d.title)).toEqual([
      'terminal',
      'file_editor',
      'think',
      'task_tracker',
      'finish',
    ]);
    // The published ToolDefinition, as the OpenHands agent server serializes it.
    expect(system.tools[1]).toEqual({
      kind: 'FileEditorTool',
      title: 'file_editor',
      description: expect.any(String),
      action_type: 'FileEditorAction',
      observation_type: 'FileEditorObservation',
      annotations: null,
      meta: null,
    });
    expect(message).toMatchObject({
      source: 'user',
      llm_message: { role: 'user', content: [{ type: 'text', text: expect.stringContaining('hello agents') }] },
    });
    const actions = log.filter((e) => e.kind === 'ActionEvent');
    expect(actions[0]).toMatchObject({
      tool_name: 'terminal',
      action: { kind: 'TerminalAction', command: 'ls demo' },
      thought: [{ text: 'Let me look around first.' }],
    });
    expect(actions[1]).toMatchObject({
      tool_name: 'file_editor',
      action: { kind: 'FileEditorAction', command: 'str_replace' },
    });
    expect(actions[2]).toMatchObject({ tool_name: 'think', action: { kind: 'ThinkAction' }, thought: [] });
    expect(actions[1].llm_response_id).toBe(actions[2].llm_response_id); // parallel calls share their response id
    expect(actions[0].llm_response_id).not.toBe(actions[1].llm_response_id);
    expect(actions[3]).toMatchObject({
      action: { kind: 'FinishAction', message: 'The greeting now says hello agents.' },
    });
    const observations = log.filter((e) => e.kind === 'ObservationEvent');
    expect(observations[0]).toMatchObject({
      action_id: actions[0].id,
      tool_call_id: actions[0].tool_call_id,
      observation: { kind: 'TerminalObservation', exit_code: 0 },
    });
    expect(observations[0].observation.content[0].text).toContain('greeting.txt');
    expect(observations[1].observation).toMatchObject({
      kind: 'FileEditorObservation',
      is_error: false,
      new_content: 'hello agents\n',
    });
    expect(log.find((e) => e.kind === 'TokenEvent')).toMatchObject({
      source: 'agent',
      prompt_token_ids: [1, 2, 3],
      response_token_ids: [4, 5],
    });
    const completionLog = log.find((e) => e.kind === 'LLMCompletionLogEvent');
    expect(completionLog.model_name).toBe('scripted-model');
    expect(JSON.parse(completionLog.log_data).request.model).toBe('scripted-model');
    // The tree: each event's parent is the one before it.
    log.forEach((e, i) => expect(e.parent_id).toBe(i === 0 ? null : log[i - 1].id));

    // What the LLM saw: the tool results of the earlier steps, as tool messages after its calls.
    expect(llm.requests).toHaveLength(3);
    expect(llm.requests[0]!.authorization).toBe('Bearer sk-test');
    const second = llm.requests[1]!.body.messages as any[];
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(second[3].content).toContain('greeting.txt');
    const third = llm.requests[2]!.body.messages as any[];
    expect(third.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool', 'tool']);

    // The websocket got every stored event, in order, plus the transient deltas of the streamed answers.
    const live = await socket.waitFor(log.length, 10_000).then(async (m) => {
      await sleep(300);
      return m;
    });
    const liveStored = live.filter((e: any) => e.kind !== 'StreamingDeltaEvent');
    expect(liveStored.map((e: any) => e.id)).toEqual(log.map((e) => e.id));
    const deltas = live.filter((e: any) => e.kind === 'StreamingDeltaEvent');
    expect(deltas.map((d: any) => d.content).join('')).toContain('Let me look around first.');
    expect(log.some((e) => e.kind === 'StreamingDeltaEvent')).toBe(false);
    socket.ws.close();
    await llm.close();
  });

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

  it('condenses history past max_size: Condensation and CondensationSummaryEvent, and the LLM sees the summary', async () => {
    const think = (n: number) => ({ tool_calls: [{ name: 'think', arguments: { thought: `step ${n}` } }] });
    const script = [
      think(1),
      think(2),
      think(3),
      { content: 'Summary: the agent thought three times.' },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ];
    const conv = await startAgentConversation(
      t,
      user,
      rt,
      script,
      { agent: { condenser: { max_size: 6, keep_first: 2 } } },
      'Think a lot.',
    );
    expect(conv.created.status).toBe(201);
    const llm = conv.llm;
    await waitForExecution(conv, 'finished');
    const log = await settledLog(t, user.key, conv);
    const condensation = log.find((e) => e.kind === 'Condensation');
    expect(condensation).toMatchObject({
      summary: 'Summary: the agent thought three times.',
      summary_offset: 2,
      llm_response_id: 'chatcmpl-scripted-4',
    });
    expect(condensation.forgotten_event_ids.length).toBeGreaterThan(0);
    const ids = new Set(log.map((e) => e.id));
    for (const id of condensation.forgotten_event_ids) expect(ids.has(id)).toBe(true);
    expect(log[log.indexOf(condensation) + 1]).toMatchObject({
      kind: 'CondensationSummaryEvent',
      summary: 'Summary: the agent thought three times.',
    });
    // The summarizing call had no tools; the call after it got the summary instead of the forgotten events.
    expect(llm.requests[3]!.body.tools).toBeUndefined();
    const after = llm.requests[4]!.body.messages as any[];
    expect(after[2]).toMatchObject({
      role: 'user',
      content: expect.stringContaining('Summary: the agent thought three times.'),
    });
    expect(after.length).toBeLessThan((llm.requests[2]!.body.messages as any[]).length + 2);
    await llm.close();
  });

  /** Restarts the api in this test process (the runtime reports to the same port). */
  const restartApi = async () => {
    t.api = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
  };

  it('keeps every event when the api stops mid-run and comes back: all arrive, none doubled', async () => {
    const step = (i: number) => ({ tool_calls: [{ name: 'terminal', arguments: { command: `echo step ${i}` } }] });
    // Step 5 is a slow answer: the api is stopped while the agent waits for it, so what follows has nowhere to go.
    const script = [
      step(1),
      step(2),
      step(3),
      step(4),
      { ...step(5), delay_ms: 3000 },
      step(6),
      step(7),
      step(8),
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ];
    const c = await startAgentConversation(t, user, rt, script);
    await eventually(() => c.llm.requests.length >= 5, {
      what: 'five LLM requests',
      timeoutMs: 60_000,
      intervalMs: 20,
    }); // the test's own bound
    let info: any;
    try {
      await t.api.close(); // the control plane goes away mid-run
      expect((await conversationInfo(c)).execution_status).toBe('running');
      await waitForExecution(c, 'finished', 30_000);
      info = await conversationInfo(c);
      expect(info.unsent_events).toBeGreaterThan(0);
    } finally {
      await restartApi();
    }
    const log = await settledLog(t, user.key, c, 30_000);
    expect(log).toHaveLength(info.events);
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
    expect(steps(log).filter((k) => k === 'ObservationEvent')).toHaveLength(9);
    log.forEach((e, i) => expect(e.parent_id).toBe(i === 0 ? null : log[i - 1].id)); // stored in the order written
    expect(kinds(log).at(-1)).toBe('ConversationStateUpdateEvent');
    await c.llm.close();
  });

  it('a requested condensation (CondensationRequest) happens at the next step, without a condenser', async () => {
    const c = await startAgentConversation(t, user, rt, [
      { tool_calls: [{ name: 'think', arguments: { thought: 'one' } }] },
      { tool_calls: [{ name: 'think', arguments: { thought: 'two' } }] },
      { content: 'First answer.' },
      { content: 'Summary: two thoughts and an answer.' },
      { content: 'Second answer.' },
    ]);
    await waitForExecution(c, 'finished');
    const requested = await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/condense`);
    expect(requested.status).toBe(200);
    expect(
      (await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/events`, { content: [{ text: 'And now?' }] })).status,
    ).toBe(200);
    await waitForExecution(c, 'finished');
    const log = await settledLog(t, user.key, c);
    const tail = steps(log).slice(steps(log).indexOf('CondensationRequest'));
    expect(tail).toEqual([
      'CondensationRequest',
      'MessageEvent',
      'Condensation',
      'CondensationSummaryEvent',
      'MessageEvent',
    ]);
    const condensation = log.find((e) => e.kind === 'Condensation');
    expect(condensation).toMatchObject({ summary: 'Summary: two thoughts and an answer.', summary_offset: 2 });
    // Forgotten: the middle of the history; kept: the system prompt, the first message and the newest half.
    const forgotten = new Set(condensation.forgotten_event_ids);
    const actions = log.filter((e) => e.kind === 'ActionEvent');
    expect(forgotten.has(actions[0].id)).toBe(true);
    expect(forgotten.has(log.find((e) => e.kind === 'SystemPromptEvent').id)).toBe(false);
    const last = c.llm.requests.at(-1)!.body.messages as any[];
    expect(last.map((m) => m.role)).toEqual(['system', 'user', 'user', ...last.slice(3).map((m) => m.role)]);
    expect(last[2].content).toContain('Summary: two thoughts and an answer.');
    expect(last.at(-1)).toMatchObject({ role: 'user', content: 'And now?' });
    await c.llm.close();
  });

  it('the labelled demo (admin demo) plays a whole scripted conversation through the running service', async () => {
    const r = await runNode(
      distPath('src', 'cli', 'admin.js'),
      ['demo', '--user', user.userId],
      {
        MONGODB_URI: t.config.mongo.uri!,
        MONGODB_DB: t.config.mongo.db,
        API_PORT: String(t.config.api.port),
        SECRETS_KEY: TEST_SECRETS_KEY,
        LOG_LEVEL: 'silent',
      },
      60_000,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.every((l) => l.startsWith('[demo] '))).toBe(true);
    expect(lines[0]).toMatch(/scripted LLM .* no model is called/);
    const conversationId = /conversation (\S+) in the runtime/.exec(r.stdout)![1]!;
    expect(lines.at(-2)).toMatch(/^\[demo\] finished: \d+ events, stored in the log/);
    const log = await loggedEvents(t, user.key, conversationId);
    expect(lines.at(-2)).toContain(`finished: ${log.length} events`);
    const first = log.find((e) => e.kind === 'MessageEvent');
    expect(first.llm_message.content[0].text).toMatch(/^\[DEMO: /);
    const outputs = log
      .filter((e) => e.kind === 'ObservationEvent' && e.tool_name === 'terminal')
      .map((e) => e.observation.content[0].text);
    expect(outputs.at(-1)).toContain('Hello, world');
    expect(outputs.at(-1)).toContain('Hello, Ada');
    expect(states(log).at(-1)).toBe('finished');
    // The demo's own key was revoked when it ended.
    const keys = await t.database.db.collection('api_keys').find({ user_id: user.userId, name: 'demo' }).toArray();
    expect(keys.map((k) => k.revoked_at)).toEqual([expect.any(Date)]);
  }, 90_000);

  it('a runtime killed with -9 mid-run, then resumed: the outbox delivers every event once, and the conversation is PAUSED with a ServerErrorEvent', async () => {
    const script = Array.from({ length: 30 }, (_, i) => ({
      tool_calls: [{ name: 'terminal', arguments: { command: `echo step ${i}; sleep 0.1` } }],
    }));
    const c = await startAgentConversation(t, user, rt, [
      ...script,
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    await sleep(400);
    const sandboxDir = path.join(dataDir, 'sandboxes', rt.sandboxId);
    try {
      await t.api.close(); // events now wait in the outbox
      await sleep(600);
      const before = await conversationInfo(c);
      expect(before.execution_status).toBe('running');
      expect(before.unsent_events).toBeGreaterThan(0);
      // The runtime as its record names it (a scan of /proc could pick a command that is just ending).
      const { pid } = (await t.stores.sandboxes.get(rt.sandboxId))!.runtime as { pid: number };
      expect(runtimeRootsUnder(sandboxDir)).toContain(pid);
      process.kill(pid, 'SIGKILL');
    } finally {
      await restartApi();
    }
    rt = await resumeKilledRuntime(t, user.key, rt.sandboxId);
    const again = { ...c, runtime: rt };

    const info = await waitForExecution(again, 'paused');
    const log = await settledLog(t, user.key, again, 30_000);
    // The log holds exactly what the runtime wrote to its outbox, in that order.
    const outboxDir = fs
      .readdirSync(path.join(sandboxDir, 'conversations'))
      .find((d) => Buffer.from(d, 'base64url').toString() === c.id)!;
    const written = fs
      .readFileSync(path.join(sandboxDir, 'conversations', outboxDir, 'outbox.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).id);
    expect(log.map((e) => e.id)).toEqual(written);
    expect(info.events).toBe(written.length);
    const restartError = log.find((e) => e.kind === 'ServerErrorEvent');
    expect(restartError).toMatchObject({ source: 'environment', code: 'RuntimeRestarted' });
    expect(states(log).slice(-1)).toEqual(['paused']);
    // Every action has its answer (an observation, or an AgentErrorEvent for the one the kill cut short).
    const answered = new Set(
      log.filter((e) => e.kind === 'ObservationEvent' || e.kind === 'AgentErrorEvent').map((e) => e.tool_call_id),
    );
    expect(log.filter((e) => e.kind === 'ActionEvent').every((a) => answered.has(a.tool_call_id))).toBe(true);

    // It goes on where it stopped.
    expect((await runtimeCall(rt, 'POST', `/api/conversations/${c.id}/run`)).status).toBe(200);
    await waitForExecution(again, 'finished', 30_000);
    const final = await settledLog(t, user.key, again, 30_000);
    expect(new Set(final.map((e) => e.id)).size).toBe(final.length);
    expect(final.filter((e) => e.kind === 'ObservationEvent' && e.tool_name === 'finish')).toHaveLength(1);
    await c.llm.close();
  });
});
