/**
 * One run of the start-task workflow: its input, its status list (each status written to MongoDB, then
 * kept for the query and for stream-start's Update) and what the start has made so far.
 */
import { condition, patched, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import {
  SEARCH_ATTRIBUTE_KEYS,
  startTaskSnapshotsAfterUpdate,
  startTaskSnapshotsQuery,
  type StartTaskSettings,
  type StartTaskSnapshot,
  type StartTaskStatus,
  type StartTaskWorkflowInput,
} from '../src/temporal/shared';
import { recordStartTask } from './start-task-activity-proxies';
import { START_TASK_SEARCH_ATTRIBUTES } from './start-task-patches';

export class StartTaskRun {
  readonly taskId: string;
  readonly userId: string;
  readonly request: StartTaskWorkflowInput['request'];
  readonly settings: StartTaskSettings;
  /** Every status so far, oldest first, as stored. */
  readonly snapshots: StartTaskSnapshot[] = [];
  /** What the start has made so far (each status carries it). */
  readonly made = {
    sandbox_id: null as string | null,
    agent_server_url: null as string | null,
    app_conversation_id: null as string | null,
  };
  /** Set once the last status (READY or ERROR) is in the list: every waiting reader gets its answer. */
  private ended = false;
  private searchable = false;

  constructor({ taskId, userId, request, settings }: StartTaskWorkflowInput) {
    this.taskId = taskId;
    this.userId = userId;
    this.request = request;
    this.settings = settings;
  }

  /** Answers the query with the status list, and stream-start's Update with the statuses a reader lacks. */
  serveStatusList(): void {
    setHandler(startTaskSnapshotsQuery, () => this.snapshots);
    // stream-start waits here for the next status instead of reading MongoDB (SPEC 4.2; docs/api.md, "Starting conversations").
    setHandler(
      startTaskSnapshotsAfterUpdate,
      async ({ after, firstAt }) => {
        const snapshots = this.snapshots;
        const otherRun = () => firstAt !== undefined && snapshots.length > 0 && snapshots[0]!.updated_at !== firstAt;
        await condition(() => snapshots.length > after || this.ended || otherRun());
        const from = otherRun() ? 0 : Math.min(after, snapshots.length);
        return { from, snapshots: snapshots.slice(from), done: this.ended };
      },
      {
        validator: ({ after, firstAt }) => {
          if (!Number.isSafeInteger(after) || after < 0) throw new Error('after must be a whole number >= 0');
          if (firstAt !== undefined && typeof firstAt !== 'string') throw new Error('firstAt must be a string');
        },
      },
    );
  }

  /**
   * Operators find starts by owner, conversation, sandbox and status (docs/operations.md, "Finding
   * workflows"). Runs recorded before these attributes replay without them.
   */
  makeSearchable(): void {
    this.searchable = patched(START_TASK_SEARCH_ATTRIBUTES);
    if (this.searchable) {
      upsertSearchAttributes([
        { key: SEARCH_ATTRIBUTE_KEYS.OwnerUserId, value: this.userId },
        { key: SEARCH_ATTRIBUTE_KEYS.ConversationId, value: this.taskId },
      ]);
    }
  }

  /** Records a status with what the start has made so far, and adds it to the list. */
  async report(status: StartTaskStatus, detail: string | null = null): Promise<void> {
    if (this.searchable) {
      upsertSearchAttributes([
        { key: SEARCH_ATTRIBUTE_KEYS.StartTaskStatus, value: status },
        ...(this.made.sandbox_id ? [{ key: SEARCH_ATTRIBUTE_KEYS.SandboxId, value: this.made.sandbox_id }] : []),
      ]);
    }
    this.snapshots.push(await recordStartTask(this.taskId, this.snapshots.length, { status, detail, ...this.made }));
  }

  /** The status list is complete: readers waiting on the Update are answered with `done`. */
  end(): void {
    this.ended = true;
  }
}
