/**
 * The agent runtime's events when things fail under it, through the control plane (a sandbox started
 * through the api, a scripted LLM on loopback, events read back from the log): the api stopped mid-run and
 * back (every event arrives, none doubled), and the runtime killed with -9 mid-run, then resumed (the
 * outbox delivers every event once; the conversation is PAUSED, and goes on).
 */
import fs from 'node:fs';
import pino from 'pino';
import { startApiServer } from '../src/api/server';
import path from 'node:path';
import {
  settledLog,
  kinds,
  runtimeCall,
  startAgentConversation,
  states,
  steps,
  waitForExecution,
  conversationInfo,
  type Runtime,
} from './helpers/agent';
import { eventually } from './helpers/eventually';
import { dataDir, resumeKilledRuntime, t, user, useRuntimeUnderTest } from './helpers/runtime-under-test';
import { runtimeRootsUnder } from './helpers/sandboxes';
import { setTimeout as sleep } from 'node:timers/promises';

describe('agent runtime through the control plane', () => {
  let rt: Runtime; // this file's own: a test assigns the resumed runtime
  useRuntimeUnderTest('agent-recovery-', (started) => (rt = started.rt));

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
