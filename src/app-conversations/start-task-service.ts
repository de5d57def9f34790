/**
 * The api's side of starts: accepting a start request (its task record, then its workflow), joining a
 * start of the same conversation, and following the task's snapshots (start-task-follower.ts). A record
 * left without its workflow (the api or Temporal died between the two) is brought back by the
 * StartTaskReconciler. What a request is refused for is in start-request-checks.ts.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, Unavailable } from '../errors';
import { inStartSpan } from '../observability/tracing';
import { echoRequest, startEnded, type StartRequest } from '../schemas/app-conversations';
import type { ConversationsStore } from '../store/conversations-store';
import type { StartTasksStore } from '../store/start-tasks-store';
import {
  startTaskWorkflowId,
  WORKFLOW_TYPES,
  type StartTaskSettings,
  type StartTaskSnapshot,
  type StartTaskWorkflow,
  type StartTaskWorkflowInput,
  workflowSummaries,
} from '../temporal/shared';
import { isTemporalUnreachable } from '../temporal/call-bounds';
import type { AppConversationsStore } from '../store/app-conversations-store';
import type { LlmProfilesStore } from '../store/llm-profiles-store';
import type { StartTaskReconciler } from './start-task-reconciler';
import {
  refuseOverQuota,
  refuseTakenConversation,
  refuseUnknownProfile,
  refuseUnknownServers,
} from './start-request-checks';
import { StartTaskFollower, type FollowOptions } from './start-task-follower';

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
   * @default 8000
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

export class StartTaskService {
  constructor(private readonly deps: StartTaskServiceDeps) {}

  /**
   * Accepts a start; answers its task id. The task id is the conversation id, so the same conversation_id
   * sent again joins the first start instead of starting a second conversation.
   */
  async start(userId: string, request: StartRequest): Promise<string> {
    refuseUnknownServers(request, this.deps.issueTrackerBOrigins ?? []);
    const id = request.conversation_id ?? randomUUID();
    // The span's context travels to the workflow in its headers (Temporal's OpenTelemetry interceptor).
    return inStartSpan(request, { taskId: id, userId }, () => this.accept(id, userId, request));
  }

  private async accept(id: string, userId: string, request: StartRequest): Promise<string> {
    if (request.conversation_id !== undefined) await refuseTakenConversation(this.deps, id, userId);
    await refuseUnknownProfile(this.deps.llmProfiles, userId, request);
    await refuseOverQuota(this.deps, id, userId, request);
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
    await this.startWorkflow({ taskId: id, userId, request: accepted, settings: this.deps.settings }, fresh);
    return id;
  }

  /**
   * Starts the task's workflow, at most once per id: a start that ran (READY, ERROR) is never run again
   * by a resend, and one whose api died between its record and its workflow is started by the resend.
   * A refusal ends a task this request created (`fresh`) in ERROR.
   */
  private async startWorkflow(input: StartTaskWorkflowInput, fresh: boolean): Promise<void> {
    const id = input.taskId;
    try {
      await this.deps.temporal.workflow.start<StartTaskWorkflow>(WORKFLOW_TYPES.startTask, {
        workflowId: startTaskWorkflowId(id),
        taskQueue: this.deps.taskQueue,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        ...workflowSummaries.startTask(input),
      });
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) return; // joined
      if (isTemporalUnreachable(e)) {
        // No answer is no refusal: Temporal may have taken the start. Its record is the acceptance: it stays
        // WORKING, and the reconciler starts its workflow if Temporal never got it.
        return;
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
  }

  /**
   * Calls `write` with each new snapshot, in order and once each, until the task is READY or ERROR (or
   * `closed` says the client went away: the start goes on without it). How it learns each status, from
   * the record and from the workflow, is told in StartTaskFollower.
   */
  async follow(
    taskId: string,
    write: (s: StartTaskSnapshot) => void,
    closed: () => boolean,
    o: FollowOptions = {},
  ): Promise<void> {
    return new StartTaskFollower(this.deps, taskId, write, closed, o).run();
  }
}
