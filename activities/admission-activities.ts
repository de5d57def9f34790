/**
 * The admission workflows' side effects: asking for a start's turn (signal-with-start, so the first ask
 * starts the line and a later one joins it), and the counts a line admits by, read from MongoDB. A
 * user's line counts the user's sandboxes and starts; an organization's, those of all its members.
 */
import type { Client } from '@temporalio/client';
import { startEnded } from '../src/schemas/app-conversations';
import { ACTIVE_SANDBOX_STATUSES, type SandboxesStore, type SandboxRecord } from '../src/store/sandboxes-store';
import type { StartTaskRecord, StartTasksStore } from '../src/store/start-tasks-store';
import type { OrganizationQuotas } from '../src/orgs/organization-quotas';
import {
  admissionRequestSignal,
  organizationAdmissionWorkflowId,
  startAdmissionWorkflowId,
  WORKFLOW_TYPES,
  workflowSummaries,
  type AdmissionLimits,
  type AdmissionLineKind,
  type AdmissionLineOwner,
  type AdmissionRequest,
  type StartAdmissionInput,
  type StartAdmissionWorkflow,
} from '../src/temporal/shared';

export interface AdmissionActivityDeps {
  temporal: Client;
  taskQueue: string;
  sandboxes: SandboxesStore;
  startTasks: StartTasksStore;
  organizationQuotas: Pick<OrganizationQuotas, 'ofUser' | 'limitsOf'>;
}

/**
 * Where a start stands after asking: in a line (its workflow id), or with nothing to wait for there;
 * for an organization's line, which organization the start counts in (in line or not).
 */
export type AdmissionAsked =
  { inLine: false; organizationId?: string } | { inLine: true; lineId?: string; organizationId?: string };

const ACTIVE = new Set<string>(ACTIVE_SANDBOX_STATUSES);

export function createAdmissionActivities(deps: AdmissionActivityDeps) {
  return {
    /**
     * Puts the start in its user's line (`line` absent) or in an organization's line, starting the line's
     * workflow when there is none; answers whether it did, and which line. A start needs room for a
     * sandbox when it makes one, or names one that does not run (it will resume it). Its organization is
     * the one the user acts in, or, for a sandbox it resumes, the one that sandbox counts in (the resume
     * is charged there). An organization without quotas has no line.
     */
    async askAdmission(a: {
      userId: string;
      taskId: string;
      newSandboxId: string | null;
      namedSandboxId: string | null;
      limits: AdmissionLimits;
      pollMs: number;
      line?: AdmissionLineKind;
    }): Promise<AdmissionAsked> {
      // One that is not the user's, or is gone, fails in its own step with its own reason.
      const named = a.namedSandboxId ? await deps.sandboxes.getOwned(a.namedSandboxId, a.userId) : null;
      const resumes = !!named && !ACTIVE.has(named.status) && named.status !== 'DELETED';
      let owner: AdmissionLineOwner = { userId: a.userId };
      let limits = a.limits;
      let roomFor = a.namedSandboxId ? (resumes ? named!.id : null) : a.newSandboxId;
      if (a.line === 'organization') {
        const counted = resumes ? named!.organization_id : null;
        const org = counted
          ? await deps.organizationQuotas.limitsOf(counted)
          : await deps.organizationQuotas.ofUser(a.userId);
        if (!org) return { inLine: false };
        owner = { organizationId: org.organizationId };
        limits = {
          maxStarts: org.concurrentStarts.max,
          maxRunning: org.runningSandboxes.max,
          named: { maxStarts: org.concurrentStarts.named, maxRunning: org.runningSandboxes.named },
        };
        // A resumed sandbox made before organization quotas counts in none: it needs no room here.
        if (a.namedSandboxId && !counted) roomFor = null;
      }
      const organizationId = owner.organizationId;
      // No bound on starts, and no room needed or no bound on it: nothing to wait for, so no line.
      if (limits.maxStarts === null && (roomFor === null || limits.maxRunning === null))
        return { inLine: false, ...(organizationId !== undefined ? { organizationId } : {}) };
      const request: AdmissionRequest = { taskId: a.taskId, roomFor, limits };
      const input: StartAdmissionInput = { ...owner, limits, pollMs: a.pollMs };
      const lineId =
        owner.organizationId !== undefined
          ? organizationAdmissionWorkflowId(owner.organizationId)
          : startAdmissionWorkflowId(a.userId);
      await deps.temporal.workflow.signalWithStart<StartAdmissionWorkflow, [AdmissionRequest]>(
        WORKFLOW_TYPES.startAdmission,
        {
          workflowId: lineId,
          taskQueue: deps.taskQueue,
          args: [input],
          signal: admissionRequestSignal,
          signalArgs: [request],
          ...workflowSummaries.startAdmission(input),
        },
      );
      return { inLine: true, lineId, ...(organizationId !== undefined ? { organizationId } : {}) };
    },

    /**
     * What the line admits by: the sandboxes starting or running of its user (or organization); the room admitted starts were
     * promised and have not taken yet (their sandbox not made, or not resumed, so far); and which admitted
     * starts have ended (or have no record), whose promise no longer holds.
     */
    async admissionCounts(
      a: AdmissionLineOwner & { admitted: { taskId: string; roomFor: string | null }[] },
    ): Promise<{ runningSandboxes: number; roomPromised: number; endedTaskIds: string[] }> {
      const roomFor = a.admitted.flatMap((r) => (r.roomFor ? [r.roomFor] : []));
      const taskIds = a.admitted.map((r) => r.taskId);
      const none = new Map<string, never>();
      const [runningSandboxes, sandboxes, tasks]: [number, Map<string, SandboxRecord>, Map<string, StartTaskRecord>] =
        a.organizationId !== undefined
          ? await Promise.all([
              deps.sandboxes.countActiveInOrganization(a.organizationId),
              roomFor.length ? deps.sandboxes.getManyInOrganization(roomFor, a.organizationId) : none,
              taskIds.length ? deps.startTasks.getMany(taskIds) : none,
            ])
          : await Promise.all([
              deps.sandboxes.countActive(a.userId),
              roomFor.length ? deps.sandboxes.getManyOwned(roomFor, a.userId) : none,
              taskIds.length ? deps.startTasks.getManyOwned(taskIds, a.userId) : none,
            ]);
      const ended = (taskId: string) => {
        const t = tasks.get(taskId);
        return !t || startEnded(t.status);
      };
      const endedTaskIds = taskIds.filter(ended);
      const roomPromised = a.admitted.filter(
        (r) => r.roomFor && !ended(r.taskId) && !ACTIVE.has(sandboxes.get(r.roomFor)?.status ?? ''),
      ).length;
      return { runningSandboxes, roomPromised, endedTaskIds };
    },
  };
}
