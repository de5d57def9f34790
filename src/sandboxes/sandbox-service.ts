/**
 * The api's side of sandboxes: creating one (its record, then its workflow), sending pause, resume and
 * delete to its workflow as Updates and answering with the resulting sandbox, and counting use for
 * idle auto-pause. The workflow owns the status; this module only reads it.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateStage,
  type Client,
  type WorkflowUpdateHandle,
} from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { generateApiKey, hashApiKey } from '../auth/api-key';
import type { SecretBox } from '../auth/secret-box';
import { Conflict, Forbidden, InvalidInput, NotFound, Unavailable } from '../errors';
import type { SandboxView } from '../schemas/sandboxes';
import type { ConversationsStore } from '../store/conversations-store';
import type { SandboxSpecsStore, StoredSandboxSpec } from '../store/sandbox-specs-store';
import type { SandboxesStore, SandboxRecord } from '../store/sandboxes-store';
import { WORKER_REPORT_FRESH_MS, type WorkerHostsStore } from '../store/worker-hosts-store';
import {
  SANDBOX_UPDATES,
  sandboxWorkflowId,
  WORKFLOW_TYPES,
  type SandboxUpdateName,
  type SandboxWorkflow,
  type SandboxWorkflowInput,
  type SandboxWorkflowSettings,
  workflowSummaries,
} from '../temporal/shared';
import { isTemporalUnreachable } from '../temporal/call-bounds';
import { askWorkflow, isCancelled, withinBound } from '../temporal/workflow-answer';
import { SandboxLimits, type SandboxLimitsDeps } from './sandbox-limits';
import { sandboxUpdateError } from './sandbox-update-errors';
import { SandboxUseRecorder } from './sandbox-use';
import { sandboxView } from './sandbox-view';

/** What the service is built over; the limits' part (process sandboxes' users, quotas) is SandboxLimitsDeps. */
export interface SandboxServiceDeps extends SandboxLimitsDeps {
  sandboxes: SandboxesStore;
  specs: SandboxSpecsStore;
  conversations: ConversationsStore;
  /** What the worker hosts said they cannot run: a spec none of those heard from lately could start is refused. */
  workerHosts: Pick<WorkerHostsStore, 'heardFrom'>;
  box: SecretBox;
  temporal: Client;
  taskQueue: string;
  defaultSpecId: string;
  settings: SandboxWorkflowSettings;
  /** How long pause, resume and delete wait for their result once the workflow accepted them. */
  operationTimeoutMs?: number;
  /** How long they wait for a worker to accept them (none polling: it never comes); then 503. */
  answerTimeoutMs?: number;
}

/** What pause, resume or delete came to: the sandbox as it is, and whether the operation is done yet. */
export interface SandboxOperationOutcome {
  sandbox: SandboxView;
  /** False: the workflow took the operation and is still carrying it out (its status shows when it is done). */
  finished: boolean;
}

/** Where a spec id came from, for the 422's loc. */
export type SpecIdSource = 'body' | 'query';

export class SandboxService {
  private readonly limits: SandboxLimits;
  private readonly use: SandboxUseRecorder;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.limits = new SandboxLimits(deps);
    this.use = new SandboxUseRecorder(deps, deps.settings.idleTimeoutMs);
  }

  /**
   * A new sandbox: its record (STARTING), then its workflow. With `sandboxId` (a start task's retried step)
   * an existing record of that id is kept and only its workflow is made sure of. It counts in
   * `organizationId` (a start's, the one it waited in line for), else in the user's current organization.
   */
  async create(
    userId: string,
    specId: string | undefined,
    source: SpecIdSource,
    sandboxId?: string,
    organizationId?: string,
  ): Promise<SandboxView> {
    if (sandboxId) {
      const existing = await this.deps.sandboxes.get(sandboxId);
      if (existing) {
        await this.startWorkflow(existing.id, userId);
        return sandboxView(existing, this.deps.box);
      }
    }
    const spec = await this.specUserMayRun(userId, specId, source);
    const organization = await this.limits.organizationOfNew(userId, organizationId);
    await this.limits.withinQuota(userId, organization);
    const record = this.newRecord(sandboxId ?? randomUUID(), userId, organization?.organizationId ?? null, spec);
    await this.deps.sandboxes.insert(record);
    await this.startWorkflowOfNew(record.id, userId, sandboxId !== undefined);
    return sandboxView(record, this.deps.box);
  }

  /** The spec a new sandbox starts from (the default one unless named): unknown is a 422, a process spec the user may not run a 403. */
  private async specUserMayRun(
    userId: string,
    specId: string | undefined,
    source: SpecIdSource,
  ): Promise<StoredSandboxSpec> {
    const id = specId ?? this.deps.defaultSpecId;
    const spec = await this.deps.specs.get(id);
    if (!spec) {
      throw new InvalidInput([
        {
          loc: specId === undefined ? [source] : [source, 'sandbox_spec_id'],
          msg: `Unknown sandbox spec ${JSON.stringify(id)}; GET /api/v1/sandbox-specs/search lists them`,
          type: 'value_error',
          input: id,
          ctx: { error: 'unknown sandbox spec' },
        },
      ]);
    }
    if (spec.provider === 'process' && !(await this.limits.mayRunProcesses(userId))) {
      throw new Forbidden(
        'Process sandboxes are not isolated from each other on this installation (the service does not run as root), ' +
          'so only the users its operator lists in SANDBOX_PROCESS_USERS may start them; SANDBOX_PROCESS_ISOLATION=none shares them with every user.',
      );
    }
    const why = await this.unrunnableEverywhere(spec);
    if (why !== null) throw new Conflict(`No worker of this installation can run sandbox spec ${spec.id}: ${why}`);
    return spec;
  }

  /**
   * Why no worker could start a sandbox of `spec` (the reason of the first), when every worker host heard
   * from lately said it cannot; null when one can, or when none was heard from (a worker may still come).
   */
  private async unrunnableEverywhere(spec: StoredSandboxSpec): Promise<string | null> {
    const hosts = await this.deps.workerHosts.heardFrom(WORKER_REPORT_FRESH_MS);
    const reasons = hosts.map(
      (h) => h.unrunnable.find((u) => u.provider === spec.provider && u.runtime === spec.runtime)?.reason ?? null,
    );
    return reasons.length > 0 && reasons.every((r) => r !== null) ? reasons[0]! : null;
  }

  /** The record of a new sandbox: STARTING, with a fresh session key (sealed, and hashed for lookups). */
  private newRecord(id: string, userId: string, organizationId: string | null, spec: StoredSandboxSpec): SandboxRecord {
    const { created_at: _created, ...specFields } = spec;
    const key = generateApiKey();
    const now = new Date();
    return {
      id,
      created_by_user_id: userId,
      organization_id: organizationId,
      sandbox_spec_id: spec.id,
      spec: specFields,
      status: 'STARTING',
      status_detail: null,
      session_key_sealed: this.deps.box.seal(key),
      session_key_hash: hashApiKey(key),
      exposed_urls: [],
      runtime: null,
      created_at: now,
      updated_at: now,
      last_used_at: now,
    };
  }

  /**
   * Starts the workflow of a just-recorded sandbox. When that fails it is a 503 and the record turns
   * ERROR, unless it is a start's (`forStart`) and Temporal did not answer: then it stays STARTING.
   */
  private async startWorkflowOfNew(id: string, userId: string, forStart: boolean): Promise<void> {
    try {
      await this.startWorkflow(id, userId);
    } catch (e) {
      if (forStart && isTemporalUnreachable(e)) {
        // A start's sandbox: the start's activity is retried and finds this record (above), so it stays
        // STARTING rather than failing the start. Temporal may have taken the workflow anyway.
        throw new Unavailable(`The workflow service did not answer the start of sandbox ${id}; try again shortly`, 5, {
          cause: e,
        });
      }
      // Not run, as far as anyone knows: ERROR, which holds no quota. Had Temporal taken the workflow after
      // all, it runs the sandbox and its statuses replace this one.
      await this.deps.sandboxes.setStatus(id, 'ERROR', `its workflow could not be started: ${(e as Error).message}`);
      throw new Unavailable('The workflow service did not accept the sandbox; try again shortly', 5, { cause: e });
    }
  }

  /** Starts the sandbox's workflow; one that runs already is left alone. */
  private async startWorkflow(sandboxId: string, userId: string): Promise<void> {
    const input: SandboxWorkflowInput = { sandboxId, ownerUserId: userId, settings: this.deps.settings };
    try {
      await this.deps.temporal.workflow.start<SandboxWorkflow>(WORKFLOW_TYPES.sandbox, {
        workflowId: sandboxWorkflowId(sandboxId),
        taskQueue: this.deps.taskQueue,
        args: [input],
        ...workflowSummaries.sandbox(input),
      });
    } catch (e) {
      if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
    }
  }

  async getMany(userId: string, ids: readonly string[]): Promise<(SandboxView | null)[]> {
    const found = await this.deps.sandboxes.getManyOwned(ids, userId);
    return ids.map((id) => {
      const r = found.get(id);
      return r ? sandboxView(r, this.deps.box) : null;
    });
  }

  /**
   * Pause, resume or delete through the sandbox's workflow; answers with the sandbox as it then is.
   *
   * The result is waited for within SANDBOX_OPERATION_TIMEOUT_MS (then Unavailable), or, given
   * `resultBy` (a time, in ms since the epoch), until then: a result still to come then is no failure, the
   * workflow has taken the operation and carries it out, and the answer is the sandbox as it is now,
   * `finished: false`.
   */
  async operate(
    userId: string,
    id: string,
    op: SandboxUpdateName,
    options: { resultBy?: number } = {},
  ): Promise<SandboxOperationOutcome> {
    const r = await this.deps.sandboxes.getOwned(id, userId);
    if (!r) throw new NotFound('Sandbox not found');
    if (r.status === 'DELETED') {
      if (op === 'delete') return { sandbox: sandboxView(r, this.deps.box), finished: true };
      throw new Conflict(`Sandbox ${id} was deleted`);
    }
    // A resume makes it run again: it counts against the quota unless it runs already.
    if (op === 'resume' && r.status !== 'RUNNING' && r.status !== 'STARTING') {
      await this.limits.withinQuota(userId, await this.limits.organizationOf(r.organization_id));
    }
    this.touch(id);
    const { temporal } = this.deps;
    const workflowId = sandboxWorkflowId(id);
    const operationTimeoutMs = this.deps.operationTimeoutMs ?? 60_000;
    let update: WorkflowUpdateHandle<unknown>;
    try {
      // Accepted by a worker within the answer bound (else no worker runs the workflow: 503 at once).
      update = await askWorkflow(temporal, workflowId, this.deps.answerTimeoutMs ?? 8000, () =>
        temporal.workflow
          .getHandle(workflowId)
          .startUpdate(SANDBOX_UPDATES[op], { waitForStage: WorkflowUpdateStage.ACCEPTED }),
      );
    } catch (e) {
      // Recorded but never run (Temporal did not confirm its workflow, and never got it): nothing to stop.
      if (e instanceof WorkflowNotFoundError && op === 'delete' && r.status === 'STARTING' && r.runtime === null) {
        await this.deps.sandboxes.setStatus(id, 'DELETED', 'deleted before its workflow ran');
        return { sandbox: sandboxView((await this.deps.sandboxes.get(id))!, this.deps.box), finished: true };
      }
      throw sandboxUpdateError(e, id, op, operationTimeoutMs);
    }
    // Then its result (stopping or starting a runtime may take a while), within the caller's wait if shorter.
    // What is left of the caller's time once the Update was accepted (the reads and the acceptance took theirs).
    const { resultBy } = options;
    const waitMs = resultBy === undefined ? operationTimeoutMs : Math.min(resultBy - Date.now(), operationTimeoutMs);
    let finished = true;
    try {
      await withinBound(temporal, Math.max(waitMs, 0), () => update.result());
    } catch (e) {
      if (!(resultBy !== undefined && isCancelled(e))) throw sandboxUpdateError(e, id, op, waitMs);
      finished = false;
    }
    const after = await this.deps.sandboxes.get(id);
    return { sandbox: sandboxView(after!, this.deps.box), finished };
  }

  /** Records use of a sandbox (at most once per interval per process): it keeps idle auto-pause away. */
  touch(sandboxId: string): void {
    this.use.touch(sandboxId);
  }

  /** Events ingested for a conversation are use of the sandbox that runs it. */
  touchConversation(conversationId: string): void {
    this.use.touchConversation(conversationId);
  }
}
