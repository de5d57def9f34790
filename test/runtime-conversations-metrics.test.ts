/**
 * The token and cost metrics of the runtime's conversations (a metrics update after each completion, the
 * totals in the info), and what a runtime restart (killed -9, resumed) keeps: the metrics, the ids of the
 * messages held, a deleted conversation gone. A sandbox started through the api (real worker, real runtime
 * process), a scripted LLM on loopback, the events read back from the control plane's log.
 */
import path from 'node:path';
import {
  conversationInfo,
  metricsUpdates,
  runtimeCall,
  settledLog,
  startAgentConversation,
  waitForExecution,
  type Runtime,
} from './helpers/agent';
import { dataDir, resumeKilledRuntime, t, user, useRuntimeUnderTest } from './helpers/runtime-under-test';
import { runtimeRootsUnder } from './helpers/sandboxes';

describe('runtime conversations: delete, messages, metrics', () => {
  let rt: Runtime; // this file's own: a test assigns the resumed runtime
  useRuntimeUnderTest('runtime-metrics-', (started) => (rt = started.rt));

  /** Kills the runtime (-9) and resumes the sandbox: a new runtime process reads its conversations back. */
  async function restartRuntime(): Promise<void> {
    const [pid] = runtimeRootsUnder(path.join(dataDir, 'sandboxes', rt.sandboxId));
    process.kill(pid!, 'SIGKILL');
    rt = await resumeKilledRuntime(t, user.key, rt.sandboxId);
  }

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
