/**
 * The conversation contract's agent at work, on the conversation the start test began
 * (conversation-contract-start.ts): it edits the repository with its own tools (every event stored once,
 * in order, valid against SPEC.md), takes a follow-up message up at the next step, and is interrupted,
 * run and paused; the sandbox paused (every process of it stopped) and resumed by the next message.
 */
import path from 'node:path';
import type { ScriptedLlm } from '../../src/llm/scripted-llm';
import { loggedEvents } from './agent';
import type { TestApi } from './api';
import type { ContractConversation } from './conversation-contract-start';
import type { ContractTarget } from './conversation-contract-target';
import { eventually } from './eventually';

export function contractAgent(target: ContractTarget, conversation: ContractConversation): void {
  let t: TestApi;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let id: string;
  let sandboxId: string;
  let repoDir: string;
  const { settled, ranAfter, handle, view, send, expectWholeLog } = conversation;

  beforeEach(() => {
    ({ t, llm, user, id, sandboxId, repoDir } = conversation);
  });

  it("edits the repository with the agent's own tools; every event stored once, in order, valid against SPEC.md", async () => {
    llm.load([
      {
        content: 'Creating the file.',
        tool_calls: [
          {
            name: 'file_editor',
            arguments: { command: 'create', path: path.posix.join(repoDir, 'hello.txt'), file_text: 'hello\n' },
          },
        ],
      },
      { tool_calls: [{ name: 'terminal', arguments: { command: `cat ${path.posix.join(repoDir, 'hello.txt')}` } }] },
      { tool_calls: [{ name: 'finish', arguments: { message: 'made hello.txt' } }] },
    ]);
    expect(await send('Make hello.txt')).toMatchObject({ status: 200, body: { success: true } });
    const log = await ranAfter([]);
    await expectWholeLog(log);
    expect(log.map((e) => e.kind)).toEqual(
      expect.arrayContaining([
        'SystemPromptEvent',
        'MessageEvent',
        'ActionEvent',
        'ObservationEvent',
        'ConversationStateUpdateEvent',
      ]),
    );
    expect(log.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual([
      'file_editor',
      'terminal',
      'finish',
    ]);
    expect(
      JSON.stringify(log.find((e) => e.kind === 'ObservationEvent' && e.tool_name === 'terminal').observation),
    ).toContain('hello');
    // The tools as the published ToolDefinition, with their kind.
    const system = log.find((e) => e.kind === 'SystemPromptEvent');
    expect(system.tools.map((tool: any) => tool.title)).toEqual(expect.arrayContaining(['terminal', 'file_editor']));
    for (const tool of system.tools) expect(tool).toMatchObject({ kind: expect.any(String) });
    // The usage figures are the conversation's metrics; the LLM was reached with the organization's key.
    const v = await view();
    expect(v).toMatchObject({
      execution_status: 'finished',
      metrics: { accumulated_token_usage: { prompt_tokens: expect.any(Number) } },
    });
    expect(v.metrics.accumulated_token_usage.prompt_tokens).toBeGreaterThan(0);
    expect(llm.requests.at(-1)!.authorization).toBe('Bearer sk-org');
  }, 180_000);

  it('takes a follow-up message up at the next step', async () => {
    llm.load([
      {
        tool_calls: [
          { name: 'terminal', arguments: { command: `echo again >> ${path.posix.join(repoDir, 'hello.txt')}` } },
        ],
      },
      { tool_calls: [{ name: 'finish', arguments: { message: 'appended' } }] },
    ]);
    const before = llm.requests.length;
    const earlier = await loggedEvents(t, user.key, id);
    expect((await send('Now append "again" to hello.txt')).status).toBe(200);
    const log = await ranAfter(earlier);
    await expectWholeLog(log);
    expect(JSON.stringify(llm.requests[before]!.body.messages)).toContain('Now append');
    expect(log.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual([
      'file_editor',
      'terminal',
      'finish',
      'terminal',
      'finish',
    ]);
    expect(
      (await t.request('GET', `/api/v1/app-conversations/${id}/file?file_path=hello.txt`, { key: user.key })).body,
    ).toBe('hello\nagain\n');
  }, 180_000);

  it('interrupts, runs and pauses the agent, each answer carrying the status read back from the runtime', async () => {
    llm.load([
      { content: 'slow', delay_ms: 30_000 },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    expect((await send('Take your time')).status).toBe(200);
    await settled('running');
    expect(await t.request('POST', `/api/v1/app-conversations/${id}/interrupt`, { key: user.key })).toMatchObject({
      status: 200,
      body: { id },
    });
    expect((await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key })).status).toBe(200);
    await settled();

    llm.load([
      { content: 'slow again', delay_ms: 20_000 },
      { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
    ]);
    expect((await send('Once more')).status).toBe(200);
    await settled('running');
    expect((await t.request('POST', `/api/v1/app-conversations/${id}/pause`, { key: user.key })).status).toBe(200);
    await settled('paused');
    // The step under way when it paused may still end first; until then run may be the runtime's 409, passed on.
    await eventually(
      async () => {
        const r = await t.request('POST', `/api/v1/app-conversations/${id}/run`, { key: user.key });
        expect([r.status, r.status === 409 ? 'busy' : r.body]).toEqual([200, expect.anything()]);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await settled();

    // The sandbox paused (every process of it stopped) and resumed by the next message.
    expect((await t.request('POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key: user.key })).body.status).toBe(
      'PAUSED',
    );
    expect(await target.frozen(await handle())).toBe(true);
    llm.load([{ content: 'Back again.' }]);
    expect(await send('Still there?')).toMatchObject({
      status: 200,
      body: { success: true, message: expect.stringContaining('resumed') },
    });
    expect(await target.frozen(await handle())).toBe(false);
    await eventually(
      async () =>
        expect(
          JSON.stringify(
            (await loggedEvents(t, user.key, id))
              .filter((e) => e.kind === 'MessageEvent' && e.source === 'agent')
              .at(-1),
          ),
        ).toContain('Back again.'),
      {
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
  }, 300_000);
}
