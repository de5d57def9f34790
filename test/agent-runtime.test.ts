/**
 * The agent runtime end to end, whole conversations: a sandbox started through the api (real worker, real
 * runtime process), a scripted conversation created in that runtime against a scripted LLM on loopback, its
 * events read back from the control plane's log and websocket; and the labelled demo (admin demo) played
 * through the running service. Errors, control, condensation and recovery: agent-runtime-*.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { settledLog, loggedEvents, runtimeCall, states, steps, waitForExecution } from './helpers/agent';
import { TEST_SECRETS_KEY } from './helpers/env';
import { distPath, runNode } from './helpers/run';
import { rt, t, user, useRuntimeUnderTest, workspace } from './helpers/runtime-under-test';
import { connect } from './helpers/ws-client';
import { setTimeout as sleep } from 'node:timers/promises';

describe('agent runtime through the control plane', () => {
  useRuntimeUnderTest('agent-');

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
});
