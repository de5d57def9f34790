/**
 * Start tasks whose workflow is gone. The api writes a task's record before it starts the task's workflow,
 * so an api that dies between the two, or a Temporal server that loses a start it had just accepted,
 * leaves a record that nothing moves (WORKING forever). The reconciler checks unfinished tasks that have
 * not moved for START_TASK_RECONCILE_AFTER_MS: a task whose workflow Temporal does not know is started
 * again from its record (the echoed request; its secrets stay sealed in the record, where the activities
 * read them), and one whose workflow ended without finishing it (terminated, timed out) becomes ERROR.
 * It runs when a followed task stalls, and as a periodic sweep in each api process. Several api processes
 * may reconcile the same task: the workflow id's REJECT_DUPLICATE policy starts it once, and the ERROR is
 * written only over the status that was read.
 */
import { startEnded } from '../schemas/app-conversations';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { StartTaskRecord, StartTasksStore } from '../store/start-tasks-store';
import { isTemporalUnreachable } from '../temporal/call-bounds';
import { isCancelled } from '../temporal/workflow-answer';
import {
  startTaskWorkflowId,
  WORKFLOW_TYPES,
  workflowSummaries,
  type StartTaskSettings,
  type StartTaskWorkflow,
  type StartTaskWorkflowInput,
} from '../temporal/shared';

export interface StartTaskReconcilerDeps {
  startTasks: StartTasksStore;
  temporal: Client;
  taskQueue: string;
  settings: StartTaskSettings;
  log: Logger;
}

export interface StartTaskReconcilerOptions {
  /** An unfinished task not updated for this long is checked (ms; START_TASK_RECONCILE_AFTER_MS). */
  afterMs: number;
  /**
   * Tasks checked per sweep; the next sweep goes on after the last one.
   * @default 20
   */
  batch?: number;
  /**
   * Time between sweeps (ms).
   * @default half of afterMs, at least 250 ms
   */
  sweepEveryMs?: number;
  /**
   * Bound of each call to Temporal (ms).
   * @default 10_000
   */
  callTimeoutMs?: number;
}

/** What a check did: nothing (`moving`, `running`, `unreachable`: checked again later), or `restarted`, `failed`. */
export const RECONCILE_OUTCOMES = ['moving', 'running', 'restarted', 'failed', 'unreachable'] as const;
export type ReconcileOutcome = (typeof RECONCILE_OUTCOMES)[number];

/** A task as read for a check, with the number of statuses in its history (where an ERROR goes). */
export interface StalledStartTask {
  task: StartTaskRecord;
  steps: number;
}

export class StartTaskReconciler {
  readonly afterMs: number;
  private readonly batch: number;
  private readonly sweepEveryMs: number;
  private readonly callTimeoutMs: number;
  /** Where the next sweep goes on: the (updated_at, id) of the last task checked, or the oldest. */
  private cursor: [Date, string] | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> = Promise.resolve();
  private readonly stopping = new AbortController();
  /** One controller per Temporal call under way (the client never removes a listener from a signal it was given). */
  private readonly calls = new Set<AbortController>();

  constructor(
    private readonly deps: StartTaskReconcilerDeps,
    options: StartTaskReconcilerOptions,
  ) {
    this.afterMs = options.afterMs;
    this.batch = options.batch ?? 20;
    this.sweepEveryMs = options.sweepEveryMs ?? Math.max(250, Math.floor(options.afterMs / 2));
    this.callTimeoutMs = options.callTimeoutMs ?? 10_000;
  }

  /** Sweeps every `sweepEveryMs` until `stop()`. */
  start(): void {
    if (this.timer || this.stopping.signal.aborted) return;
    const next = () => {
      this.timer = setTimeout(() => {
        this.sweeping = this.sweep()
          .catch((e: Error) =>
            this.deps.log.warn({ err: e.message }, 'start-task sweep failed; trying again at the next one'),
          )
          .finally(() => {
            if (!this.stopping.signal.aborted) next();
          });
      }, this.sweepEveryMs);
      this.timer.unref(); // never what keeps a process alive
    };
    next();
  }

  /** Ends the sweeps; waits for one under way (its Temporal calls are cancelled). */
  async stop(): Promise<void> {
    this.stopping.abort();
    for (const c of this.calls) c.abort();
    clearTimeout(this.timer);
    await this.sweeping;
  }

  /** Checks one batch of stalled tasks, one after the other; answers how many it checked. */
  async sweep(): Promise<number> {
    const page = await this.deps.startTasks.stalled(new Date(Date.now() - this.afterMs), this.batch, this.cursor);
    const last = page.at(-1)?.task;
    this.cursor = page.length === this.batch && last ? [last.updated_at, last.id] : undefined;
    for (const stalled of page) {
      if (this.stopping.signal.aborted) break;
      await this.reconcile(stalled);
    }
    return page.length;
  }

  /** Checks a task that may have lost its workflow; never throws (a failed check is `unreachable`). */
  async reconcile({ task, steps }: StalledStartTask): Promise<ReconcileOutcome> {
    if (startEnded(task.status) || Date.now() - task.updated_at.getTime() < this.afterMs) return 'moving';
    const workflowId = startTaskWorkflowId(task.id);
    let status: string;
    try {
      status = (await this.call(() => this.deps.temporal.workflow.getHandle(workflowId).describe())).status.name;
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return this.restart(task, steps);
      this.deps.log.warn(
        { err: (e as Error).message, task_id: task.id },
        'could not check the workflow of a stalled start task; checking again later',
      );
      return 'unreachable';
    }
    if (status === 'RUNNING' || status === 'PAUSED') return 'running'; // a long step, or no worker yet: the workflow goes on
    // The workflow writes READY or ERROR before it completes, so it was ended from outside (terminated, timed out).
    return this.fail(task, steps, `The start's workflow ended (${status}) before the start finished; start again`);
  }

  private async restart(task: StartTaskRecord, steps: number): Promise<ReconcileOutcome> {
    const input: StartTaskWorkflowInput = {
      taskId: task.id,
      userId: task.created_by_user_id,
      request: task.request,
      settings: this.deps.settings,
    };
    try {
      // The new run writes its statuses from the first: none of the lost run's may remain after them.
      if (steps > 0 && !(await this.deps.startTasks.clearHistoryIfUnchanged(task.id, task.updated_at))) return 'moving';
    } catch (e) {
      this.deps.log.warn(
        { err: (e as Error).message, task_id: task.id },
        'could not clear the history of a lost start task; trying again later',
      );
      return 'unreachable';
    }
    try {
      await this.call(() =>
        this.deps.temporal.workflow.start<StartTaskWorkflow>(WORKFLOW_TYPES.startTask, {
          workflowId: startTaskWorkflowId(task.id),
          taskQueue: this.deps.taskQueue,
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          ...workflowSummaries.startTask(input),
        }),
      );
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) return 'running'; // another api process, or a resend, was first
      // Temporal did not answer (or this api is closing): no verdict, checked again later. Any other answer is one.
      if (this.stopping.signal.aborted || isTemporalUnreachable(e) || isCancelled(e)) {
        this.deps.log.warn(
          { err: (e as Error).message, task_id: task.id },
          'could not start the lost workflow of a start task; trying again later',
        );
        return 'unreachable';
      }
      return this.fail(
        task,
        steps,
        `The start was lost before it ran and could not be scheduled again (${(e as Error).message}); start again`,
      );
    }
    this.deps.log.warn(
      { task_id: task.id, status: task.status, stalled_ms: Date.now() - task.updated_at.getTime() },
      'start task had no workflow; started it again from its record',
    );
    return 'restarted';
  }

  private async fail(task: StartTaskRecord, steps: number, detail: string): Promise<ReconcileOutcome> {
    const { sandbox_id, agent_server_url, app_conversation_id } = task;
    try {
      const written = await this.deps.startTasks.recordIfUnchanged(task.id, task.updated_at, steps, {
        status: 'ERROR',
        detail,
        sandbox_id,
        agent_server_url,
        app_conversation_id,
      });
      if (!written) return 'moving'; // the workflow wrote a status meanwhile
    } catch (e) {
      this.deps.log.warn(
        { err: (e as Error).message, task_id: task.id },
        'could not record the ERROR of a stalled start task; trying again later',
      );
      return 'unreachable';
    }
    this.deps.log.warn({ task_id: task.id, detail }, 'stalled start task set to ERROR');
    return 'failed';
  }

  /** A Temporal call bounded by callTimeoutMs and cancelled by stop(). */
  private async call<R>(fn: () => Promise<R>): Promise<R> {
    const { temporal } = this.deps;
    if (this.stopping.signal.aborted) throw new Error('the api is closing');
    const controller = new AbortController();
    this.calls.add(controller);
    try {
      return await temporal.withAbortSignal(controller.signal, () =>
        temporal.withDeadline(Date.now() + this.callTimeoutMs, fn),
      );
    } finally {
      this.calls.delete(controller);
    }
  }
}
