/**
 * The api's side of sandboxes: creating one (its record, then its workflow), sending pause, resume and
 * delete to its workflow as Updates and answering with the resulting sandbox, and counting use for
 * idle auto-pause. The workflow owns the status; this module only reads it.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type Client,
} from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { generateApiKey, hashApiKey } from '../auth/api-key';
import type { SecretBox } from '../auth/secret-box';
import type { Config } from '../config';
import { Conflict, Forbidden, InvalidInput, NotFound, TooMany, Unavailable, UpstreamFailed } from '../errors';
import type { SandboxView } from '../schemas/sandboxes';
import type { ConversationsStore } from '../store/conversations-store';
import type { SandboxSpecsStore } from '../store/sandbox-specs-store';
import type { SandboxesStore } from '../store/sandboxes-store';
import type { UsersStore } from '../store/users-store';
import type { OrganizationLimits, OrganizationQuotas } from '../orgs/organization-quotas';
import {
  SANDBOX_FAILURES,
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
import {
  askWorkflow,
  formatSeconds,
  isCancelled,
  isWorkflowTaskFailing,
  NoWorkerAnswered,
  withinBound,
  WorkflowTaskFailing,
} from '../temporal/workflow-answer';
import { sandboxView } from './sandbox-view';

export interface SandboxServiceDeps {
  sandboxes: SandboxesStore;
  specs: SandboxSpecsStore;
  conversations: ConversationsStore;
  box: SecretBox;
  temporal: Client;
  taskQueue: string;
  defaultSpecId: string;
  settings: SandboxWorkflowSettings;
  /** How long pause, resume and delete wait for their result once the workflow accepted them. */
  operationTimeoutMs?: number;
  /** How long they wait for a worker to accept them (none polling: it never comes); then 503. */
  answerTimeoutMs?: number;
  users: Pick<UsersStore, 'get'>;
  /** Who may start process sandboxes: everyone, unless they are not isolated and not shared on purpose. */
  processSandboxes: { restricted: boolean; users: string[] };
  /** Sandboxes one user may have starting or running at once (USER_MAX_RUNNING_SANDBOXES); null: no limit. */
  maxRunning?: number | null;
  /** What an organization's members may have together; absent: no organization limits. */
  organizationQuotas?: Pick<OrganizationQuotas, 'limitsOf' | 'ofUser'>;
}

/** The sandbox workflow's settings, from the config (the api and the worker start sandbox workflows). */
export const sandboxWorkflowSettings = (c: Config['sandboxes']): SandboxWorkflowSettings => ({
  healthIntervalMs: c.healthIntervalMs,
  healthGraceMs: c.healthGraceMs,
  hostLostMs: c.hostLostMs,
  idleTimeoutMs: c.idleTimeoutMs,
  historyLimit: c.historyLimit,
});

/** Where a spec id came from, for the 422's loc. */
export type SpecIdSource = 'body' | 'query';

export class SandboxService {
  /** Last time this process recorded use of a sandbox (or of a conversation's sandbox). */
  private readonly touched = new Map<string, number>();
  private readonly touchEveryMs: number;

  /** A user allowed process sandboxes: always when they are isolated or shared on purpose, else only if listed (by id or email). */
  private async mayRunProcesses(userId: string): Promise<boolean> {
    const { restricted, users } = this.deps.processSandboxes;
    if (!restricted || users.includes(userId)) return true;
    if (!users.some((u) => u.includes('@'))) return false;
    const user = await this.deps.users.get(userId);
    return !!user && users.includes(user.email);
  }

  constructor(private readonly deps: SandboxServiceDeps) {
    const idle = deps.settings.idleTimeoutMs;
    this.touchEveryMs = idle > 0 ? Math.min(10_000, Math.floor(idle / 4)) : 10_000;
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
    if (spec.provider === 'process' && !(await this.mayRunProcesses(userId))) {
      throw new Forbidden(
        'Process sandboxes are not isolated from each other on this installation (the service does not run as root), ' +
          'so only the users its operator lists in SANDBOX_PROCESS_USERS may start them; SANDBOX_PROCESS_ISOLATION=none shares them with every user.',
      );
    }
    const quotas = this.deps.organizationQuotas;
    const organization = !quotas
      ? null
      : organizationId
        ? await quotas.limitsOf(organizationId)
        : await quotas.ofUser(userId);
    await this.withinQuota(userId, organization);
    const { created_at: _created, ...specFields } = spec;
    const key = generateApiKey();
    const now = new Date();
    const record = {
      id: sandboxId ?? randomUUID(),
      created_by_user_id: userId,
      organization_id: organization?.organizationId ?? null,
      sandbox_spec_id: spec.id,
      spec: specFields,
      status: 'STARTING' as const,
      status_detail: null,
      session_key_sealed: this.deps.box.seal(key),
      session_key_hash: hashApiKey(key),
      exposed_urls: [],
      runtime: null,
      created_at: now,
      updated_at: now,
      last_used_at: now,
    };
    await this.deps.sandboxes.insert(record);
    try {
      await this.startWorkflow(record.id, userId);
    } catch (e) {
      if (sandboxId !== undefined && isTemporalUnreachable(e)) {
        // A start's sandbox: the start's activity is retried and finds this record (above), so it stays
        // STARTING rather than failing the start. Temporal may have taken the workflow anyway.
        throw new Unavailable(
          `The workflow service did not answer the start of sandbox ${record.id}; try again shortly`,
          5,
          { cause: e },
        );
      }
      // Not run, as far as anyone knows: ERROR, which holds no quota. Had Temporal taken the workflow after
      // all, it runs the sandbox and its statuses replace this one.
      await this.deps.sandboxes.setStatus(
        record.id,
        'ERROR',
        `its workflow could not be started: ${(e as Error).message}`,
      );
      throw new Unavailable('The workflow service did not accept the sandbox; try again shortly', 5, { cause: e });
    }
    return sandboxView(record, this.deps.box);
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
   * One more running sandbox of the user past USER_MAX_RUNNING_SANDBOXES, or of the organization it counts
   * in past the organization's quota, is refused (429), saying which and what to do.
   */
  private async withinQuota(userId: string, organization: OrganizationLimits | null): Promise<void> {
    const max = this.deps.maxRunning;
    const orgMax = organization?.runningSandboxes.max;
    const [active, orgActive] = await Promise.all([
      max ? this.deps.sandboxes.countActive(userId) : 0,
      organization && orgMax ? this.deps.sandboxes.countActiveInOrganization(organization.organizationId) : 0,
    ]);
    if (max && active >= max) {
      throw new TooMany(
        `You have ${active} sandboxes starting or running, as many as one user may (USER_MAX_RUNNING_SANDBOXES=${max}): pause or delete one first`,
      );
    }
    if (organization && orgMax && orgActive >= orgMax) {
      throw new TooMany(
        `Your organization ${organization.organizationId} has ${orgActive} sandboxes starting or running, as many as it may (${organization.runningSandboxes.named}): you or another member must pause or delete one first`,
      );
    }
  }

  /** Pause, resume or delete through the sandbox's workflow; answers with the sandbox as it then is. */
  async operate(userId: string, id: string, op: SandboxUpdateName): Promise<SandboxView> {
    const r = await this.deps.sandboxes.getOwned(id, userId);
    if (!r) throw new NotFound('Sandbox not found');
    if (r.status === 'DELETED') {
      if (op === 'delete') return sandboxView(r, this.deps.box);
      throw new Conflict(`Sandbox ${id} was deleted`);
    }
    // A resume makes it run again: it counts against the quota unless it runs already.
    if (op === 'resume' && r.status !== 'RUNNING' && r.status !== 'STARTING') {
      const quotas = this.deps.organizationQuotas;
      await this.withinQuota(userId, quotas && r.organization_id ? await quotas.limitsOf(r.organization_id) : null);
    }
    this.touch(id);
    const { temporal } = this.deps;
    const workflowId = sandboxWorkflowId(id);
    try {
      // Accepted by a worker within the answer bound (else no worker runs the workflow: 503 at once),
      // then its result within the operation bound (stopping a runtime may take a while).
      const update = await askWorkflow(temporal, workflowId, this.deps.answerTimeoutMs ?? 10_000, () =>
        temporal.workflow
          .getHandle(workflowId)
          .startUpdate(SANDBOX_UPDATES[op], { waitForStage: WorkflowUpdateStage.ACCEPTED }),
      );
      await withinBound(temporal, this.deps.operationTimeoutMs ?? 60_000, () => update.result());
    } catch (e) {
      // Recorded but never run (Temporal did not confirm its workflow, and never got it): nothing to stop.
      if (e instanceof WorkflowNotFoundError && op === 'delete' && r.status === 'STARTING' && r.runtime === null) {
        await this.deps.sandboxes.setStatus(id, 'DELETED', 'deleted before its workflow ran');
        return sandboxView((await this.deps.sandboxes.get(id))!, this.deps.box);
      }
      throw this.updateError(e, id, op);
    }
    const after = await this.deps.sandboxes.get(id);
    return sandboxView(after!, this.deps.box);
  }

  private updateError(e: unknown, id: string, op: SandboxUpdateName): Error {
    if (e instanceof WorkflowUpdateFailedError) {
      const cause = e.cause as { type?: string; message?: string } | undefined;
      const message = cause?.message ?? e.message;
      // A provider failure is upstream (502); the rest (deleted, wrong status) is a conflict with the state (409).
      return cause?.type === SANDBOX_FAILURES.providerFailed ? new UpstreamFailed(message) : new Conflict(message);
    }
    if (e instanceof WorkflowNotFoundError)
      return new Conflict(`Sandbox ${id} has no running workflow; delete it and start a new one`);
    if (e instanceof NoWorkerAnswered) {
      return new Unavailable(
        `No worker answered the workflow of sandbox ${id} within ${formatSeconds(e.boundMs)} s (is a worker running?); the ${op} may still happen when one does: read the sandbox again`,
        5,
        { cause: e },
      );
    }
    if (e instanceof WorkflowTaskFailing || isWorkflowTaskFailing(e)) {
      // The workflow's code fails on a worker (a bug, a deploy that does not replay it): nothing the
      // caller sent is wrong, and the same call may succeed once a worker runs it again.
      return new Unavailable(
        `The workflow of sandbox ${id} is failing its workflow tasks (a worker cannot run it; its log says why), so the ${op} was not taken: try again later`,
        5,
        { cause: e },
      );
    }
    if (isCancelled(e)) {
      const s = Math.round((this.deps.operationTimeoutMs ?? 60_000) / 1000);
      return new Unavailable(
        `The workflow of sandbox ${id} accepted the ${op} but did not finish it within ${s} s; it may still happen: read the sandbox again`,
        5,
      );
    }
    return e as Error;
  }

  /** Records use of a sandbox (at most once per interval per process): it keeps idle auto-pause away. */
  touch(sandboxId: string): void {
    if (!this.due(sandboxId)) return;
    void this.deps.sandboxes.touch(sandboxId).catch(() => this.touched.delete(sandboxId));
  }

  /** Events ingested for a conversation are use of the sandbox that runs it. */
  touchConversation(conversationId: string): void {
    const key = `conversation:${conversationId}`;
    if (!this.due(key)) return;
    void this.deps.conversations
      .sandboxIdOf(conversationId)
      .then((sandboxId) => (sandboxId ? this.deps.sandboxes.touch(sandboxId) : undefined))
      .catch(() => this.touched.delete(key));
  }

  private due(key: string): boolean {
    const now = Date.now();
    const last = this.touched.get(key);
    if (last !== undefined && now - last < this.touchEveryMs) return false;
    this.touched.set(key, now);
    if (this.touched.size > 10_000) {
      for (const [k, t] of this.touched) if (now - t >= this.touchEveryMs) this.touched.delete(k);
    }
    return true;
  }
}
