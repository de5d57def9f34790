/**
 * The api's side of starts: accepting a start request (its task record, then its workflow), joining a
 * start of the same conversation, and following the task's snapshots: the stored record first, then
 * each new status as the workflow answers its Update (or from the record). A record left without its workflow (the
 * api or Temporal died between the two) is brought back by the StartTaskReconciler.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateStage, type Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, InvalidInput, TooMany, Unavailable } from '../errors';
import { inStartSpan } from '../observability/tracing';
import { echoRequest, startEnded, type StartRequest } from '../schemas/app-conversations';
import type { ConversationsStore } from '../store/conversations-store';
import type { StartTaskRecord, StartTaskStep, StartTasksStore } from '../store/start-tasks-store';
import {
  startTaskSnapshotsAfterUpdate,
  startTaskWorkflowId,
  WORKFLOW_TYPES,
  type SnapshotsFrom,
  type StartTaskSettings,
  type StartTaskSnapshot,
  type StartTaskWorkflow,
  type StartTaskWorkflowInput,
  workflowSummaries,
} from '../temporal/shared';
import { isTemporalUnreachable } from '../temporal/call-bounds';
import { askWorkflow, isCancelled, NoWorkerAnswered, withinBound } from '../temporal/workflow-answer';
import type { AppConversationsStore } from '../store/app-conversations-store';
import type { LlmProfilesStore } from '../store/llm-profiles-store';
import type { StartTaskReconciler } from './start-task-reconciler';
import { issueTrackerBServerRefusal } from './issue-tracker-b-servers';
import { setTimeout as sleep } from 'node:timers/promises';

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
  /**
   * How follow() learns each new status (START_STREAM_FOLLOW): from the workflow, or from the record.
   * @default 'workflow'
   */
  follow?: 'workflow' | 'record';
  /**
   * The longest a worker has to accept the workflow's Update before the record is read instead (ms;
   * WORKFLOW_ANSWER_TIMEOUT_MS); the first ask waits 1 s, each one cut after it twice as long.
   * @default 10_000
   */
  answerTimeoutMs?: number;
  /** The most starts one user may have not ended, under way or in line (USER_MAX_PENDING_STARTS); null: no bound. */
  maxPending?: number | null;
  /** The most conversations one user may keep, counting those its unfinished starts will make (USER_MAX_CONVERSATIONS); null: no bound. */
  maxConversations?: number | null;
  /** Read to count the user's conversations (needed with maxConversations). */
  appConversations?: Pick<AppConversationsStore, 'count'>;
  /** The issue tracker B servers a processor may name (ISSUE_TRACKER_B_ORIGINS); none when absent. */
  issueTrackerBOrigins?: readonly string[];
  /** Read to refuse an agent_profile_id that names none of the caller's saved LLM profiles. */
  llmProfiles?: Pick<LlmProfilesStore, 'byId'>;
}

/** The first bound on a worker's acceptance of the Update before the record is read (ms); it doubles up to WORKFLOW_ANSWER_TIMEOUT_MS. */
const FIRST_ACCEPT_MS = 1000;

/** One wait on the workflow lasts at most this long, then another is asked (no call is left open without a bound). */
const WORKFLOW_WAIT_MS = 60_000;

export const snapshotOf = ({ conversation_id: _c, ...t }: StartTaskRecord): StartTaskSnapshot => ({
  ...t,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

/**
 * The task's snapshots from its stored history. A status write that was lost leaves a hole (null) in the
 * array when a later one lands: it is skipped, never a reason to fail.
 */
const snapshotsOf = ({
  task: { conversation_id: _c, ...task },
  history,
}: {
  task: StartTaskRecord;
  history: (StartTaskStep | null)[];
}): StartTaskSnapshot[] =>
  history
    .filter((h): h is StartTaskStep => h != null && typeof h === 'object' && h.at instanceof Date)
    .map(({ at, ...step }) => ({
      ...task,
      ...step,
      created_at: task.created_at.toISOString(),
      updated_at: at.toISOString(),
    }));

export class StartTaskService {
  constructor(private readonly deps: StartTaskServiceDeps) {}

  /**
   * Accepts a start; answers its task id. The task id is the conversation id, so the same conversation_id
   * sent again joins the first start instead of starting a second conversation.
   */
  async start(userId: string, request: StartRequest): Promise<string> {
    this.refuseUnknownServers(request);
    const id = request.conversation_id ?? randomUUID();
    // The span's context travels to the workflow in its headers (Temporal's OpenTelemetry interceptor).
    return inStartSpan(request, { taskId: id, userId }, () => this.accept(id, userId, request));
  }

  /** A processor that names a server the operator does not allow is refused before anything starts. */
  private refuseUnknownServers(request: StartRequest): void {
    const details = request.processors.flatMap((p, i) => {
      if (p.kind !== 'IssueTrackerBV1CallbackProcessor' || !('base_api_url' in p)) return [];
      const refused = issueTrackerBServerRefusal(p.base_api_url, this.deps.issueTrackerBOrigins ?? []);
      return refused
        ? [{ loc: ['body', 'processors', i, 'base_api_url'], msg: refused, type: 'value_error', input: p.base_api_url }]
        : [];
    });
    if (details.length > 0) throw new InvalidInput(details);
  }

  private async accept(id: string, userId: string, request: StartRequest): Promise<string> {
    if (request.conversation_id !== undefined) await this.refuseTakenConversation(id, userId);
    await this.refuseUnknownProfile(userId, request);
    await this.withinQuota(id, userId, request);
    const secrets =
      Object.keys(request.secrets).length > 0 ? this.deps.box.seal(JSON.stringify(request.secrets)) : null;
    const echoed = echoRequest(request) as Record<string, unknown>;
    const fresh = await this.deps.startTasks.create(
      {
        id,
        created_by_user_id: userId,
        conversation_id: id,
        status: 'WORKING',
        detail: null,
        request: echoed,
        app_conversation_id: null,
        sandbox_id: null,
        agent_server_url: null,
      },
      secrets,
    );
    let accepted = echoed;
    if (!fresh) {
      const existing = await this.deps.startTasks.get(id);
      if (existing?.created_by_user_id !== userId) throw new Conflict(`conversation_id ${id} is already in use`);
      if (startEnded(existing.status)) return id; // joined a start that ended: nothing to run
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
      if (isTemporalUnreachable(e)) {
        // No answer is no refusal: Temporal may have taken the start. Its record is the acceptance: it stays
        // WORKING, and the reconciler starts its workflow if Temporal never got it.
        return id;
      }
      if (fresh)
        await this.deps.startTasks.record(id, 0, {
          status: 'ERROR',
          detail: `the start could not be scheduled: ${(e as Error).message}`,
          app_conversation_id: null,
          sandbox_id: null,
          agent_server_url: null,
        });
      throw new Unavailable('The workflow service did not accept the start; try again shortly', 5, { cause: e });
    }
    return id;
  }

  /**
   * A start past USER_MAX_PENDING_STARTS starts not ended, or past USER_MAX_CONVERSATIONS conversations
   * (with those its unfinished starts will make), is a 429 saying which; a resend that joins a start of
   * the caller's is not a new one.
   */
  private async withinQuota(id: string, userId: string, request: StartRequest): Promise<void> {
    const { maxPending, maxConversations, appConversations, startTasks } = this.deps;
    if (!maxPending && !(maxConversations && appConversations)) return;
    const [pending, kept] = await Promise.all([
      startTasks.countUnfinished(userId),
      maxConversations && appConversations ? appConversations.count(userId, {}) : 0,
    ]);
    const overPending = !!maxPending && pending >= maxPending;
    const overConversations = !!maxConversations && kept + pending >= maxConversations;
    if (!overPending && !overConversations) return;
    if (request.conversation_id !== undefined && (await startTasks.get(id))?.created_by_user_id === userId) return;
    if (overPending) {
      throw new TooMany(
        `You have ${pending} starts not finished (under way or waiting in line), as many as one user may (USER_MAX_PENDING_STARTS=${maxPending}): wait for some to end`,
      );
    }
    throw new TooMany(
      `You keep ${kept} conversations${pending ? ` and ${pending} starts will make ${pending === 1 ? 'one' : 'more'}` : ''}, as many as one user may (USER_MAX_CONVERSATIONS=${maxConversations}): delete some first`,
    );
  }

  /** An agent_profile_id must name one of the caller's saved LLM profiles (the start uses its LLM). */
  private async refuseUnknownProfile(userId: string, request: StartRequest): Promise<void> {
    const id = request.agent_profile_id;
    if (!id || (this.deps.llmProfiles && (await this.deps.llmProfiles.byId(userId, id)))) return;
    throw new InvalidInput([
      {
        loc: ['body', 'agent_profile_id'],
        msg: `You have no LLM profile with id ${id}: GET /api/v1/settings/profiles lists yours`,
        type: 'value_error',
        input: id,
      },
    ]);
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

  /**
   * Calls `write` with each new snapshot, in order and once each, until the task is READY or ERROR (or
   * `closed` says the client went away: the start goes on without it).
   *
   * It reads the stored record first (the workflow writes each status there before it keeps it), so a
   * task that has ended, or whose run is lost, is sent at once. With `follow: 'workflow'` (the default) it
   * then waits on the start-task workflow itself: an Update that the workflow answers when its status list
   * grows, so a status reaches the client as the workflow records it. The Update's id names the stream
   * and the position asked from, so asking again (after a cut wait) joins the same Update rather than
   * leaving another one waiting in the workflow. While no worker accepts the Update within its bound (1 s,
   * doubling to `answerTimeoutMs`), and once the workflow is closed or unknown, the record is read again,
   * then the workflow asked again: a stream outlives a worker killed mid-start. With `follow: 'record'` it only reads the
   * record.
   *
   * Record reads are one `_id` lookup each; a read that finds nothing new doubles the wait before the
   * next, up to `maxPollMs`, and a new status brings it back to `pollMs`. A task that has not moved for
   * the reconciler's bound is checked (at most once per bound): its workflow may be lost.
   */
  async follow(
    taskId: string,
    write: (s: StartTaskSnapshot) => void,
    closed: () => boolean,
    o: FollowOptions = {},
  ): Promise<void> {
    const { reconciler } = this.deps;
    const { pollMs = 100, maxPollMs = 800, onRead } = o;
    const written = new WrittenSnapshots(write);
    const viaWorkflow = (this.deps.follow ?? 'workflow') === 'workflow';
    const streamId = randomUUID();
    let wait = pollMs;
    let checkedAt = 0;
    /** One read of the record: writes what is new; true when the stream is over. */
    const readRecord = async (): Promise<boolean> => {
      onRead?.('record');
      // A read that fails (the database busy, or away for a moment) is tried again: the stream goes on.
      const found = await this.deps.startTasks.withHistory(taskId).catch(() => undefined);
      if (found === undefined) {
        wait = pollMs * 5;
        return closed();
      }
      // The record is gone (the conversation deleted mid-start): nothing more will come.
      if (found === null) return true;
      const before = written.count;
      written.take(0, snapshotsOf(found));
      if (closed() || written.ended) return true;
      // The record says the start ended although its history does not show it (a status write lost):
      // the stream ends with the record's state, never waits for a status that will not come.
      if (startEnded(found.task.status)) {
        const { conversation_id: _c, ...task } = found.task;
        write({ ...task, created_at: task.created_at.toISOString(), updated_at: task.updated_at.toISOString() });
        return true;
      }
      if (reconciler && Date.now() - Math.max(found.task.updated_at.getTime(), checkedAt) >= reconciler.afterMs) {
        checkedAt = Date.now();
        await reconciler.reconcile({ task: found.task, steps: found.history.length });
      }
      wait = written.count !== before ? pollMs : Math.min(wait * 2, maxPollMs);
      return false;
    };
    // How long the next ask waits for a worker to accept: a second, doubling after each cut wait up to the
    // answer bound; an answer brings it back. A busy worker is not asked again and again.
    const firstAcceptMs = Math.min(FIRST_ACCEPT_MS, this.deps.answerTimeoutMs ?? 10_000);
    let acceptMs = firstAcceptMs;
    let readNext = true;
    for (;;) {
      if (closed()) return;
      if (readNext && (await readRecord())) return;
      readNext = true;
      if (!viaWorkflow) {
        await sleep(wait);
        continue;
      }
      const answer = await this.nextFromWorkflow(
        taskId,
        `${streamId}:${written.count}:${written.firstAt ?? ''}`,
        written,
        closed,
        acceptMs,
      );
      if (typeof answer === 'object') {
        onRead?.('update');
        if (written.take(answer.from, answer.snapshots)) {
          if (answer.done || written.ended) return;
          // The workflow answered: it is asked again at once, with no record read between.
          wait = pollMs;
          acceptMs = firstAcceptMs;
          readNext = false;
          continue;
        }
      }
      // No worker accepted within the wait, or the accepted Update gave no answer within WORKFLOW_WAIT_MS
      // (the wait is spent either way): the record is read next, and a busy worker gets longer to accept.
      // The workflow said no at once (closed, unknown): the wait is slept first.
      if (answer === 'cut') acceptMs = Math.min(acceptMs * 2, this.deps.answerTimeoutMs ?? 10_000);
      else if (answer === 'refused') await sleep(wait);
    }
  }

  /**
   * One wait on the workflow for the snapshots past those written: its Update's answer. 'cut' when no
   * worker accepted the Update within `acceptMs`; 'waited' when it was accepted but gave no answer within
   * WORKFLOW_WAIT_MS, or the client left; 'refused' when the workflow is closed or unknown, or the Update
   * failed.
   */
  private async nextFromWorkflow(
    taskId: string,
    updateId: string,
    written: WrittenSnapshots,
    closed: () => boolean,
    acceptMs: number,
  ): Promise<SnapshotsFrom | 'cut' | 'waited' | 'refused'> {
    const { temporal } = this.deps;
    const workflowId = startTaskWorkflowId(taskId);
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

/** What a follower has written: how many snapshots, the first one's time (to tell a run started again) and the last status. */
class WrittenSnapshots {
  count = 0;
  firstAt: string | undefined;
  private last: string | undefined;

  constructor(private readonly write: (s: StartTaskSnapshot) => void) {}

  get ended(): boolean {
    return startEnded(this.last);
  }

  /**
   * Writes those of `snapshots` (the task's from position `from` on) not written yet. A list from the
   * first position that is shorter than what was written, or starts at another time, is a run started
   * again from the record (its workflow was lost): it is written whole again rather than none of it. An
   * empty list (a history just cleared for such a run) writes nothing and forgets nothing.
   * False when the list does not reach what was written (a gap): nothing is written.
   */
  take(from: number, snapshots: StartTaskSnapshot[]): boolean {
    if (
      from === 0 &&
      this.count > 0 &&
      snapshots.length > 0 &&
      (snapshots.length < this.count || snapshots[0]!.updated_at !== this.firstAt)
    )
      this.count = 0;
    if (from > this.count) return false;
    for (const s of snapshots.slice(this.count - from)) {
      this.write(s);
      this.count++;
      this.last = s.status;
      if (this.count === 1) this.firstAt = s.updated_at;
    }
    return true;
  }
}
