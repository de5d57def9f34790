/**
 * Callbacks workflows do not stay open per conversation: 1,000 conversations' workflows, started by
 * signal-with-start as ingest's dispatch starts them, all end after CALLBACKS_IDLE_MS without events, carry
 * OwnerUserId, name their idle wait in the history, and the next event starts a new run. Real worker, real
 * Temporal dev server, real database. Prints the open counts and times it measured.
 */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { CallbackDispatch } from '../src/app-conversations/callback-dispatch';
import { callbacksWorkflowId, WORKFLOW_TYPES } from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { appConversationRecord } from './helpers/app-conversations';
import { eventually } from './helpers/eventually';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

/**
 * 200 in the suite: 1,000 (the figure) saturate this 2-core machine's worker for two minutes,
 * which the starts of tests running beside it feel. CALLBACKS_IDLE_CONVERSATIONS=1000 measures that.
 */
const CONVERSATIONS = Number(process.env.CALLBACKS_IDLE_CONVERSATIONS ?? 200);
const IDLE_MS = 15_000;

describe('callbacks workflows end when idle', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let client: Client;

  beforeAll(async () => {
    service = await startServiceUnderTest('callbacks-idle-', { CALLBACKS_IDLE_MS: String(IDLE_MS) });
    t = service.t;
    client = await service.temporal();
  });

  afterAll(async () => {
    await service?.close();
  });

  it(`${CONVERSATIONS} conversations: all open while busy, none open after the idle bound, started again by the next event`, async () => {
    const taskQueue = t.config.temporal.taskQueue;
    const owner = `owner-${randomUUID()}`;
    const ids = Array.from({ length: CONVERSATIONS }, () => randomUUID());
    const now = new Date();
    for (let i = 0; i < ids.length; i += 100) {
      await Promise.all(
        ids.slice(i, i + 100).map((id) =>
          t.stores.appConversations.create(
            appConversationRecord({
              id,
              created_by_user_id: owner,
              processors: [{ kind: 'bench-noop' }],
              created_at: now,
              updated_at: now,
            }),
          ),
        ),
      );
    }
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const dispatch = new CallbackDispatch({
      temporal: client,
      taskQueue,
      appConversations: t.stores.appConversations,
      log,
      idleMs: IDLE_MS,
    });

    const open = `WorkflowType = '${WORKFLOW_TYPES.callbacks}' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`;
    const count = async (query: string) => (await client.workflow.count(query)).count;

    const startedAt = Date.now();
    for (const id of ids) dispatch.notify(id); // fire and forget, as ingest does
    await eventually(async () => expect(await count(open)).toBe(CONVERSATIONS), { timeoutMs: 60_000, intervalMs: 250 });
    const allOpenMs = Date.now() - startedAt;
    expect(warnings).toEqual([]);
    const openBefore = await count(open);
    expect(openBefore).toBe(CONVERSATIONS);
    // Found by their owner (open or already ended: the worker gets through them at its own pace).
    const mine = `WorkflowType = '${WORKFLOW_TYPES.callbacks}' AND TaskQueue = '${taskQueue}' AND OwnerUserId = '${owner}'`;
    await eventually(async () => expect(await count(mine)).toBe(CONVERSATIONS), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });

    // After the idle bound, none stays open.
    await eventually(async () => expect(await count(open)).toBe(0), { timeoutMs: IDLE_MS + 120_000, intervalMs: 500 });
    const noneOpenMs = Date.now() - startedAt;
    const completed = await count(
      `WorkflowType = '${WORKFLOW_TYPES.callbacks}' AND ExecutionStatus = 'Completed' AND TaskQueue = '${taskQueue}'`,
    );
    expect(completed).toBe(CONVERSATIONS);
    expect(noneOpenMs).toBeGreaterThanOrEqual(IDLE_MS);

    // The idle wait is named in the history.
    const history = await client.workflow.getHandle(callbacksWorkflowId(ids[1]!)).fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers.map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString('utf8')))).toEqual([
      `wait for new events; ${IDLE_MS / 1000} s idle ends this run`,
    ]);
    expect(timers[0]!.timerStartedEventAttributes!.startToFireTimeout!.seconds!.toString()).toBe(
      String(IDLE_MS / 1000),
    );

    // The next event starts a new run.
    const firstRun = (await client.workflow.getHandle(callbacksWorkflowId(ids[0]!)).describe()).runId;
    dispatch.notify(ids[0]!);
    await eventually(
      async () => {
        const d = await client.workflow.getHandle(callbacksWorkflowId(ids[0]!)).describe();
        expect(d.status.name).toBe('RUNNING');
        expect(d.runId).not.toBe(firstRun);
        expect(d.searchAttributes.OwnerUserId).toEqual([owner]);
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(await count(open)).toBe(1);
    await client.workflow.getHandle(callbacksWorkflowId(ids[0]!)).terminate('test over');

    console.log(
      `callbacks idle: ${CONVERSATIONS} conversations signalled-with-start; ${openBefore} open ${allOpenMs} ms after the first signal; ` +
        `0 open ${noneOpenMs} ms after it (CALLBACKS_IDLE_MS ${IDLE_MS}); ${completed} completed; the next event started 1 new run`,
    );
  }, 300_000);
});
