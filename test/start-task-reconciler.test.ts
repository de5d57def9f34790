/**
 * A start task's record without its workflow (the api, or Temporal, died between the two): the api's
 * reconciler starts the workflow again from the record, through its periodic sweep and when a followed
 * task stalls; a workflow ended from outside leaves the task ERROR. The state is made for real: the
 * record written as the api writes it, and no workflow at all.
 */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { StartTaskReconciler, type ReconcileOutcome } from '../src/app-conversations/start-task-reconciler';
import { StartTaskService } from '../src/app-conversations/start-task-service';
import {
  START_TASK_STATUSES,
  StartRequestSchema,
  type StartRequest,
  type StartTaskStatus,
} from '../src/schemas/app-conversations';
import type { StartTasksStore } from '../src/store/start-tasks-store';
import {
  startTaskWorkflowId,
  WORKFLOW_TYPES,
  type StartTaskSnapshot,
  type StartTaskWorkflowInput,
} from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { uniqueName } from './helpers/env';
import { eventually } from './helpers/eventually';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { acceptedTaskRecord, setUnusedOrgLlm, startTaskEnded, waitForStartTask } from './helpers/start-tasks';
import { setTimeout as sleep } from 'node:timers/promises';

const until = (done: () => boolean, timeoutMs: number) => eventually(done, { timeoutMs, intervalMs: 10 });
const RECONCILE_AFTER_MS = 1000;

describe('start tasks whose workflow was lost', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let user: { userId: string; key: string };
  let temporal: Client;
  let startTasks: StartTasksStore;

  beforeAll(async () => {
    service = await startServiceUnderTest('starts-reconcile-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_TASK_RECONCILE_AFTER_MS: String(RECONCILE_AFTER_MS),
    });
    t = service.t;
    user = await t.newUser();
    await setUnusedOrgLlm(t, user.key);
    temporal = await service.temporal();
    startTasks = t.stores.startTasks;
  });

  afterAll(async () => {
    await service?.close();
  });

  const workingRecord = (id: string, request?: StartRequest) => acceptedTaskRecord(user.userId, id, request);
  /** The record exactly as the api's accept writes it (request echoed, secrets sealed), `ageMs` old, and no workflow. */
  const acceptedWithoutWorkflow = async (ageMs: number, body: Record<string, unknown> = {}) => {
    const id = randomUUID();
    const request = StartRequestSchema.parse({ ...body, conversation_id: id });
    const sealed = Object.keys(request.secrets).length > 0 ? t.box.seal(JSON.stringify(request.secrets)) : null;
    const created = await startTasks.create(workingRecord(id, request), sealed, new Date(Date.now() - ageMs));
    expect(created).toBe(true);
    return id;
  };
  const waitForTask = (id: string, done: (s: any) => boolean, timeoutMs?: number) =>
    waitForStartTask(t, user.key, id, done, timeoutMs);

  it('a record whose workflow never started is started again by the api from its record, and reaches READY', async () => {
    const id = await acceptedWithoutWorkflow(0, { secrets: { DEPLOY_TOKEN: 'tok-reconciled' } });
    await expect(temporal.workflow.getHandle(startTaskWorkflowId(id)).describe()).rejects.toThrow(/not found/i);
    // Nobody follows the task: the api's sweep finds it once it has not moved for the bound.
    const ready = await waitForTask(id, startTaskEnded);
    expect(ready).toMatchObject({
      id,
      status: 'READY',
      app_conversation_id: id,
      sandbox_id: expect.any(String),
      detail: null,
    });
    expect(ready.request.secrets).toEqual({ DEPLOY_TOKEN: '**********' });
    const stored = await t.database.db.collection('start_tasks').findOne({ _id: id as any });
    expect(stored!.history.map((h: any) => h.status)).toEqual(START_TASK_STATUSES.filter((s) => s !== 'ERROR'));
    expect(stored!.secrets_sealed).toEqual(expect.any(String)); // the activities read the secrets from here
    // READY is written by the workflow's last step, a moment before the workflow completes.
    const handle = temporal.workflow.getHandle(startTaskWorkflowId(id));
    const result = (await handle.result()) as StartTaskSnapshot[];
    expect(result.at(-1)?.status).toBe('READY');
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  }, 90_000);

  it('a workflow ended from outside before the start finished (terminated) leaves the task ERROR with a detail', async () => {
    const id = randomUUID();
    // A workflow nobody runs (no worker polls its queue), then its record, then it is terminated.
    const input: StartTaskWorkflowInput = {
      taskId: id,
      userId: user.userId,
      request: {},
      settings: { sandboxWaitMs: 1000, setupScriptTimeoutMs: 1000 },
    };
    const handle = await temporal.workflow.start(WORKFLOW_TYPES.startTask, {
      workflowId: startTaskWorkflowId(id),
      taskQueue: uniqueName('nobody'),
      args: [input],
    });
    await startTasks.create(workingRecord(id), null);
    await handle.terminate('operator');
    const failed = await waitForTask(id, startTaskEnded, 20_000);
    expect(failed).toMatchObject({
      status: 'ERROR',
      detail: "The start's workflow ended (TERMINATED) before the start finished; start again",
    });
  }, 30_000);

  it('joining a stalled task with stream-start streams it through to READY', async () => {
    const id = await acceptedWithoutWorkflow(5 * RECONCILE_AFTER_MS);
    const joined = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: { conversation_id: id },
    });
    expect(joined.status).toBe(200);
    expect(joined.body.map((s: any) => s.status)).toEqual(START_TASK_STATUSES.filter((s) => s !== 'ERROR'));
  }, 90_000);

  it('follow() from the record polls less while a task does not move, and closely again once it does', async () => {
    const id = randomUUID();
    // Updated "in a minute": the api's sweep leaves it alone while this test follows it.
    expect(await startTasks.create(workingRecord(id), null, new Date(Date.now() + 60_000))).toBe(true);
    const step = (status: StartTaskStatus) => ({
      status,
      detail: null,
      app_conversation_id: null,
      sandbox_id: null,
      agent_server_url: null,
    });
    await startTasks.record(id, 0, step('WORKING'), new Date(Date.now() + 60_000)); // what the workflow writes first
    let reads = 0;
    const counted = Object.create(startTasks) as StartTasksStore;
    counted.withHistory = (taskId: string) => {
      reads++;
      return startTasks.withHistory(taskId);
    };
    const service = new StartTaskService({
      startTasks: counted,
      conversations: t.conversations,
      box: t.box,
      temporal,
      taskQueue: t.config.temporal.taskQueue,
      settings: { sandboxWaitMs: 60_000, setupScriptTimeoutMs: 60_000 },
      follow: 'record',
    });
    const written: { status: string; at: number }[] = [];
    const began = Date.now();
    let stopAt = Infinity;
    const following = service.follow(
      id,
      (s) => written.push({ status: s.status, at: Date.now() }),
      () => Date.now() > stopAt,
      { pollMs: 100, maxPollMs: 800 },
    );
    try {
      await sleep(3000);
      // 100, 200, 400, 800, 800 ms between reads: about 7 in 3 s, not the 30 of a fixed 100 ms.
      expect(written.map((w) => w.status)).toEqual(['WORKING']);
      expect(reads).toBeGreaterThanOrEqual(4);
      expect(reads).toBeLessThanOrEqual(9);

      const movedAt = Date.now();
      await startTasks.record(id, 1, step('WAITING_FOR_SANDBOX'), new Date(Date.now() + 60_000));
      await until(() => written.length === 2, 3000);
      expect(written[1]!.at - movedAt).toBeLessThanOrEqual(800 + 300); // at most one longest wait, and a read
      const readsAfterMove = reads;
      await startTasks.record(id, 2, step('PREPARING_REPOSITORY'), new Date(Date.now() + 60_000));
      await until(() => written.length === 3, 3000);
      // Back to the short wait after a move: the next status comes within a few short polls.
      expect(reads - readsAfterMove).toBeLessThanOrEqual(3);
    } finally {
      stopAt = 0;
      await following;
    }
    expect(Date.now() - began).toBeLessThan(10_000);
  }, 30_000);

  it('follow() has a stalled task checked at once, not only at the next sweep, and started again once', async () => {
    const id = await acceptedWithoutWorkflow(RECONCILE_AFTER_MS / 2);
    // The api's own service, built as the api builds it, with a reconciler of a shorter bound that does
    // not sweep: what brings the task back here is follow().
    const reconciler = new StartTaskReconciler(
      {
        startTasks,
        temporal,
        taskQueue: t.config.temporal.taskQueue,
        settings: {
          sandboxWaitMs: t.config.starts.sandboxWaitMs,
          setupScriptTimeoutMs: t.config.starts.setupScriptTimeoutMs,
        },
        log: pino({ level: 'silent' }),
      },
      { afterMs: RECONCILE_AFTER_MS / 5 },
    );
    const outcomes: ReconcileOutcome[] = [];
    const reconcile = reconciler.reconcile.bind(reconciler);
    reconciler.reconcile = async (s) => {
      const outcome = await reconcile(s);
      outcomes.push(outcome);
      return outcome;
    };
    const service = new StartTaskService({
      startTasks,
      conversations: t.conversations,
      box: t.box,
      temporal,
      taskQueue: t.config.temporal.taskQueue,
      settings: { sandboxWaitMs: 60_000, setupScriptTimeoutMs: 60_000 },
      reconciler,
    });
    const written: StartTaskSnapshot[] = [];
    await service.follow(
      id,
      (s) => written.push(s),
      () => false,
      { pollMs: 50 },
    );
    expect(written.map((s) => s.status)).toEqual(START_TASK_STATUSES.filter((s) => s !== 'ERROR'));
    expect(outcomes[0]).toBe('restarted');
    expect(outcomes.filter((o) => o === 'restarted')).toHaveLength(1);
    await reconciler.stop();
  }, 90_000);
});
