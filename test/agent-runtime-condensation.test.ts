/**
 * Condensation of a conversation's history in the agent runtime, through the control plane (a sandbox
 * started through the api, a scripted LLM on loopback, events read back from the log): by the condenser
 * past max_size, and on request (CondensationRequest) without one; what the LLM sees afterwards.
 */
import { settledLog, runtimeCall, startAgentConversation, steps, waitForExecution } from './helpers/agent';
import { rt, t, user, useRuntimeUnderTest } from './helpers/runtime-under-test';

describe('agent runtime through the control plane', () => {
  useRuntimeUnderTest('agent-condensation-');

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
});
