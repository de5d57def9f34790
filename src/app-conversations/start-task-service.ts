/**
 * The api's side of starts: accepting a start request (its task record, then its workflow), joining a
 * start of the same conversation, and reading the task's snapshots from the workflow's query (every
 * status so far) or, once the workflow is gone, from MongoDB. A record left without its workflow (the
 * api or Temporal died between the two) is brought back by the StartTaskReconciler.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, Unavailable } from '../errors';
import { inStartSpan } from '../observability/tracing';
import { echoRequest, type StartRequest } from '../schemas/app-conversations';
import type { ConversationsStore } from '../store/conversations-store';
import type { StartTaskRecord, StartTaskStep, StartTasksStore } from '../store/start-tasks-store';
import {
  startTaskWorkflowId,
  WORKFLOW_TYPES,
  type StartTaskSettings,
  type StartTaskSnapshot,
  type StartTaskWorkflow,
  type StartTaskWorkflowInput,
  workflowSummaries,
} from '../temporal/shared';
import type { StartTaskReconciler } from './start-task-reconciler';

export interface StartTaskServiceDeps {
  startTasks: StartTasksStore;
  /** Read to refuse a conversation_id that names a conversation no start of the caller's made. */
  conversations: ConversationsStore;
  box: SecretBox;
  temporal: Client;
  taskQueue: string;
  settings: StartTaskSettings;
  /** Checks a followed task that has not moved for its bound (its workflow may be lost). */
  reconciler?: StartTaskReconciler;
}

export const TERMINAL_STATUSES: readonly string[] = ['READY', 'ERROR'];

export const snapshotOf = ({ conversation_id: _c, ...t }: StartTaskRecord): StartTaskSnapshot => ({
  ...t,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

/**
 * The task's snapshots from its stored history. A status write that was lost leaves a hole (null) in the
 * array when a later one lands: it is skipped, never a reason to fail.
 */
const snapshotsOf = ({ task: { conversation_id: _c, ...task }, history }: { task: StartTaskRecord; history: (StartTaskStep | null)[] }): StartTaskSnapshot[] =>
  history
    .filter((h): h is StartTaskStep => h != null && typeof h === 'object' && h.at instanceof Date)
    .map(({ at, ...step }) => ({ ...task, ...step, created_at: task.created_at.toISOString(), updated_at: at.toISOString() }));

export class StartTaskService {
  constructor(private readonly deps: StartTaskServiceDeps) {}

  /**
   * Accepts a start; answers its task id. The task id is the conversation id, so the same conversation_id
   * sent again joins the first start instead of starting a second conversation.
   */
  async start(userId: string, request: StartRequest): Promise<string> {
    const id = request.conversation_id ?? randomUUID();
    // The span's context travels to the workflow in its headers (Temporal's OpenTelemetry interceptor).
    return inStartSpan(request, { taskId: id, userId }, () => this.accept(id, userId, request));
  }

  private async accept(id: string, userId: string, request: StartRequest): Promise<string> {
    if (request.conversation_id !== undefined) await this.refuseTakenConversation(id, userId);
    const secrets = Object.keys(request.secrets).length > 0 ? this.deps.box.seal(JSON.stringify(request.secrets)) : null;
    const echoed = echoRequest(request) as Record<string, unknown>;
    const fresh = await this.deps.startTasks.create(
      { id, created_by_user_id: userId, conversation_id: id, status: 'WORKING', detail: null, request: echoed, app_conversation_id: null, sandbox_id: null, agent_server_url: null },
      secrets,
    );
    let accepted = echoed;
    if (!fresh) {
      const existing = await this.deps.startTasks.get(id);
      if (existing?.created_by_user_id !== userId) throw new Conflict(`conversation_id ${id} is already in use`);
      accepted = existing.request; // a join runs what the first request asked for, never a mix of the two
    }
    const input: StartTaskWorkflowInput = { taskId: id, userId, request: accepted, settings: this.deps.settings };
    try {
      // Started at most once per id: a start that ran (READY, ERROR) is never run again by a resend, and one
      // whose api died between its record and its workflow is started by the resend.
      await this.deps.temporal.workflow.start<StartTaskWorkflow>(WORKFLOW_TYPES.startTask, {
        workflowId: startTaskWorkflowId(id),
        taskQueue: this.deps.taskQueue,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        ...workflowSummaries.startTask(input),
      });
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) return id; // joined
      if (fresh) await this.deps.startTasks.record(id, 0, { status: 'ERROR', detail: `the start could not be scheduled: ${(e as Error).message}`, app_conversation_id: null, sandbox_id: null, agent_server_url: null });
      throw new Unavailable('The workflow service did not accept the start; try again shortly', 5, { cause: e });
    }
    return id;
  }

  /**
   * A conversation_id that names an existing conversation is a join only when a start made it (its task
   * exists: create() then checks the task's owner). Any other conversation, another user's or one made
   * outside a start (the demo's), is never taken over: 409. This check comes before the task record; the
   * startConversation activity refuses an id taken in the meantime.
   */
  private async refuseTakenConversation(id: string, userId: string): Promise<void> {
    const conversation = await this.deps.conversations.get(id);
    if (!conversation || (await this.deps.startTasks.get(id))) return;
    throw new Conflict(
      conversation.created_by_user_id === userId
        ? `conversation_id ${id} names a conversation that was not made by a start; send another conversation_id, or none`
        : `conversation_id ${id} is already in use`,
    );
  }

  /** Every snapshot of the task so far, oldest first, from its stored history (the workflow appends each status). */
  async snapshots(taskId: string): Promise<StartTaskSnapshot[]> {
    const found = await this.deps.startTasks.withHistory(taskId);
    return found ? snapshotsOf(found) : [];
  }

  /**
   * Calls `write` with each new snapshot, in order, until the task is READY or ERROR (or `closed` says
   * the client went away: the start goes on without it). It reads MongoDB, one `_id` lookup per poll,
   * rather than querying the workflow: a query runs on a worker, beside the starts themselves. A poll
   * that finds nothing new doubles the wait before the next, up to `maxPollMs`; a new status brings it
   * back to `pollMs`: a start that moves is followed closely, and 200 streams of starts queued behind
   * one another do not read the database 2,000 times a second. A task that has not moved for the
   * reconciler's bound is checked (at most once per bound): its workflow may be lost.
   */
  async follow(taskId: string, write: (s: StartTaskSnapshot) => void, closed: () => boolean, pollMs = 100, maxPollMs = 800): Promise<void> {
    const { reconciler } = this.deps;
    let wait = pollMs;
    let sent = 0;
    let firstAt: string | undefined;
    let checkedAt = 0;
    for (;;) {
      // A read that fails (the database busy, or away for a moment) is tried again: the stream goes on.
      const found = await this.deps.startTasks.withHistory(taskId).catch(() => undefined);
      if (found === undefined) {
        if (closed()) return;
        await new Promise((r) => setTimeout(r, pollMs * 5));
        continue;
      }
      const all = found ? snapshotsOf(found) : [];
      // A run started again from the record (its workflow was lost) writes its statuses from the first:
      // the client is sent them all again rather than none of those below what it had.
      if (all.length < sent || (sent > 0 && all[0]?.updated_at !== firstAt)) sent = 0;
      for (const s of all.slice(sent)) write(s);
      wait = all.length !== sent ? pollMs : Math.min(wait * 2, maxPollMs);
      sent = all.length;
      firstAt = all[0]?.updated_at;
      if (closed() || TERMINAL_STATUSES.includes(all.at(-1)?.status ?? '')) return;
      // The record says the start ended although its history does not show it (a status write lost):
      // the stream ends with the record's state, never waits for a status that will not come.
      if (found && TERMINAL_STATUSES.includes(found.task.status)) {
        const { conversation_id: _c, ...task } = found.task;
        write({ ...task, created_at: task.created_at.toISOString(), updated_at: task.updated_at.toISOString() });
        return;
      }
      if (found && reconciler && Date.now() - Math.max(found.task.updated_at.getTime(), checkedAt) >= reconciler.afterMs) {
        checkedAt = Date.now();
        await reconciler.reconcile({ task: found.task, steps: found.history.length });
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
