/**
 * Following one start task for one stream: its snapshots from the stored record, then each new status
 * from the start-task workflow's Update (or from the record again), until the task is READY or ERROR.
 */
import { WorkflowUpdateStage } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEnded } from '../schemas/app-conversations';
import type { StartTaskRecord } from '../store/start-tasks-store';
import {
  startTaskSnapshotsAfterUpdate,
  startTaskWorkflowId,
  type SnapshotsFrom,
  type StartTaskSnapshot,
  type StartTaskWorkflow,
} from '../temporal/shared';
import { askWorkflow, isCancelled, NoWorkerAnswered, withinBound } from '../temporal/workflow-answer';
import { snapshotOf, snapshotsOf, WrittenSnapshots } from './start-task-snapshots';
import type { StartTaskServiceDeps } from './start-task-service';

/** The first bound on a worker's acceptance of the Update before the record is read (ms); it doubles up to WORKFLOW_ANSWER_TIMEOUT_MS. */
const FIRST_ACCEPT_MS = 1000;

/** One wait on the workflow lasts at most this long, then another is asked (no call is left open without a bound). */
const WORKFLOW_WAIT_MS = 60_000;

/** Where follow() looked for a status: the workflow's Update, or the stored record. */
export type FollowSource = 'update' | 'record';

export interface FollowOptions {
  /** First wait between record reads (ms). @default 100 */
  pollMs?: number;
  /** Longest wait between record reads while nothing moves (ms). @default 800 */
  maxPollMs?: number;
  /** Told of each read, by where it went (the api counts them). */
  onRead?: (source: FollowSource) => void;
}

/** What a wait on the workflow gave: the snapshots past those written, or why there are none (nextFromWorkflow). */
type WorkflowAnswer = SnapshotsFrom | 'cut' | 'waited' | 'refused';

/**
 * A follower reads the stored record first (the workflow writes each status there before it keeps it), so
 * a task that has ended, or whose run is lost, is sent at once. With `follow: 'workflow'` (the default) it
 * then waits on the start-task workflow itself: an Update that the workflow answers when its status list
 * grows, so a status reaches the client as the workflow records it. The Update's id names the stream
 * and the position asked from, so asking again (after a cut wait) joins the same Update rather than
 * leaving another one waiting in the workflow. While no worker accepts the Update within its bound (1 s,
 * doubling to `answerTimeoutMs`), and once the workflow is closed or unknown, the record is read again,
 * then the workflow asked again: a stream outlives a worker killed mid-start. With `follow: 'record'` it
 * only reads the record.
 *
 * Record reads are one `_id` lookup each; a read that finds nothing new doubles the wait before the
 * next, up to `maxPollMs`, and a new status brings it back to `pollMs`. A task that has not moved for
 * the reconciler's bound is checked (at most once per bound): its workflow may be lost.
 */
export class StartTaskFollower {
  private readonly written: WrittenSnapshots;
  private readonly streamId = randomUUID();
  private readonly pollMs: number;
  private readonly maxPollMs: number;
  private readonly onRead: FollowOptions['onRead'];
  /** The wait before the next record read. */
  private wait: number;
  /** When the reconciler last checked the task (ms since the epoch). */
  private checkedAt = 0;
  /** The longest a worker has to accept the Update (WORKFLOW_ANSWER_TIMEOUT_MS). */
  private readonly answerTimeoutMs: number;
  private readonly firstAcceptMs: number;
  /**
   * How long the next ask waits for a worker to accept: a second, doubling after each cut wait up to the
   * answer bound; an answer brings it back. A busy worker is not asked again and again.
   */
  private acceptMs: number;

  constructor(
    private readonly deps: StartTaskServiceDeps,
    private readonly taskId: string,
    private readonly write: (s: StartTaskSnapshot) => void,
    private readonly closed: () => boolean,
    { pollMs = 100, maxPollMs = 800, onRead }: FollowOptions,
  ) {
    this.written = new WrittenSnapshots(write);
    this.pollMs = pollMs;
    this.maxPollMs = maxPollMs;
    this.onRead = onRead;
    this.wait = pollMs;
    this.answerTimeoutMs = deps.answerTimeoutMs ?? 8000;
    this.firstAcceptMs = Math.min(FIRST_ACCEPT_MS, this.answerTimeoutMs);
    this.acceptMs = this.firstAcceptMs;
  }

  /** Writes each new snapshot until the task has ended or the client went away. */
  async run(): Promise<void> {
    const viaWorkflow = (this.deps.follow ?? 'workflow') === 'workflow';
    let readNext = true;
    for (;;) {
      if (this.closed()) return;
      if (readNext && (await this.readRecord())) return;
      readNext = true;
      if (!viaWorkflow) {
        await sleep(this.wait);
        continue;
      }
      const { written } = this;
      const answer = await this.nextFromWorkflow(`${this.streamId}:${written.count}:${written.firstAt ?? ''}`);
      if (typeof answer === 'object') {
        this.onRead?.('update');
        if (written.take(answer.from, answer.snapshots)) {
          if (answer.done || written.ended) return;
          // The workflow answered: it is asked again at once, with no record read between.
          this.wait = this.pollMs;
          this.acceptMs = this.firstAcceptMs;
          readNext = false;
          continue;
        }
      }
      // No worker accepted within the wait, or the accepted Update gave no answer within WORKFLOW_WAIT_MS
      // (the wait is spent either way): the record is read next, and a busy worker gets longer to accept.
      // The workflow said no at once (closed, unknown): the wait is slept first.
      if (answer === 'cut') this.acceptMs = Math.min(this.acceptMs * 2, this.answerTimeoutMs);
      else if (answer === 'refused') await sleep(this.wait);
    }
  }

  /** One read of the record: writes what is new; true when the stream is over. */
  private async readRecord(): Promise<boolean> {
    const { written, pollMs } = this;
    this.onRead?.('record');
    // A read that fails (the database busy, or away for a moment) is tried again: the stream goes on.
    const found = await this.deps.startTasks.withHistory(this.taskId).catch(() => undefined);
    if (found === undefined) {
      this.wait = pollMs * 5;
      return this.closed();
    }
    // The record is gone (the conversation deleted mid-start): nothing more will come.
    if (found === null) return true;
    const before = written.count;
    written.take(0, snapshotsOf(found));
    if (this.closed() || written.ended) return true;
    // The record says the start ended although its history does not show it (a status write lost):
    // the stream ends with the record's state, never waits for a status that will not come.
    if (startEnded(found.task.status)) {
      this.write(snapshotOf(found.task));
      return true;
    }
    await this.checkIfStalled(found.task, found.history.length);
    this.wait = written.count !== before ? pollMs : Math.min(this.wait * 2, this.maxPollMs);
    return false;
  }

  /** A task that has not moved for the reconciler's bound is checked (at most once per bound). */
  private async checkIfStalled(task: StartTaskRecord, steps: number): Promise<void> {
    const { reconciler } = this.deps;
    if (reconciler && Date.now() - Math.max(task.updated_at.getTime(), this.checkedAt) >= reconciler.afterMs) {
      this.checkedAt = Date.now();
      await reconciler.reconcile({ task, steps });
    }
  }

  /**
   * One wait on the workflow for the snapshots past those written: its Update's answer. 'cut' when no
   * worker accepted the Update within `acceptMs`; 'waited' when it was accepted but gave no answer within
   * WORKFLOW_WAIT_MS, or the client left; 'refused' when the workflow is closed or unknown, or the Update
   * failed.
   */
  private async nextFromWorkflow(updateId: string): Promise<WorkflowAnswer> {
    const { temporal } = this.deps;
    const { written, closed, acceptMs } = this;
    const workflowId = startTaskWorkflowId(this.taskId);
    const handle = temporal.workflow.getHandle<StartTaskWorkflow>(workflowId);
    const left = new AbortController();
    const watch = setInterval(() => closed() && left.abort(), 250);
    let accepted = false;
    try {
      const update = await askWorkflow(temporal, workflowId, acceptMs, () =>
        handle.startUpdate(startTaskSnapshotsAfterUpdate, {
          updateId,
          args: [{ after: written.count, ...(written.firstAt === undefined ? {} : { firstAt: written.firstAt }) }],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      );
      accepted = true;
      return await withinBound(temporal, WORKFLOW_WAIT_MS, () => update.result(), left.signal);
    } catch (e) {
      if (e instanceof NoWorkerAnswered || isCancelled(e)) return accepted ? 'waited' : 'cut';
      return 'refused';
    } finally {
      clearInterval(watch);
    }
  }
}
