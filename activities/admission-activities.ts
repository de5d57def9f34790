/**
 * The admission workflow's side effects: asking for a start's turn (signal-with-start, so the first ask
 * starts the user's line and a later one joins it), and the counts it admits by, read from MongoDB.
 */
import type { Client } from '@temporalio/client';
import { TERMINAL_STATUSES } from '../src/app-conversations/start-task-service';
import { ACTIVE_SANDBOX_STATUSES, type SandboxesStore, type SandboxRecord } from '../src/store/sandboxes-store';
import type { StartTaskRecord, StartTasksStore } from '../src/store/start-tasks-store';
import {
  admissionRequestSignal,
  startAdmissionWorkflowId,
  WORKFLOW_TYPES,
  workflowSummaries,
  type AdmissionLimits,
  type AdmissionRequest,
  type StartAdmissionInput,
  type StartAdmissionWorkflow,
} from '../src/temporal/shared';

export interface AdmissionActivityDeps {
  temporal: Client;
  taskQueue: string;
  sandboxes: SandboxesStore;
  startTasks: StartTasksStore;
}

const ACTIVE = new Set<string>(ACTIVE_SANDBOX_STATUSES);

export function createAdmissionActivities(deps: AdmissionActivityDeps) {
  return {
    /**
     * Puts the start in its user's line, starting the line's workflow when there is none; answers whether
     * it did. A start needs room for a sandbox when it makes one, or names one that does not run (it will
     * resume it).
     */
    async askAdmission(a: { userId: string; taskId: string; newSandboxId: string | null; namedSandboxId: string | null; limits: AdmissionLimits; pollMs: number }): Promise<{ inLine: boolean }> {
      let roomFor = a.newSandboxId;
      if (a.namedSandboxId) {
        const named = await deps.sandboxes.getOwned(a.namedSandboxId, a.userId);
        // One that is not the user's, or is gone, fails in its own step with its own reason.
        roomFor = named && !ACTIVE.has(named.status) && named.status !== 'DELETED' ? named.id : null;
      }
      // Needing no room, with no bound on starts: nothing to wait for, so no line.
      if (roomFor === null && a.limits.maxStarts === null) return { inLine: false };
      const request: AdmissionRequest = { taskId: a.taskId, roomFor, limits: a.limits };
      const input: StartAdmissionInput = { userId: a.userId, limits: a.limits, pollMs: a.pollMs };
      await deps.temporal.workflow.signalWithStart<StartAdmissionWorkflow, [AdmissionRequest]>(WORKFLOW_TYPES.startAdmission, {
        workflowId: startAdmissionWorkflowId(a.userId),
        taskQueue: deps.taskQueue,
        args: [input],
        signal: admissionRequestSignal,
        signalArgs: [request],
        ...workflowSummaries.startAdmission(input),
      });
      return { inLine: true };
    },

    /**
     * What the line admits by: the user's sandboxes starting or running; the room admitted starts were
     * promised and have not taken yet (their sandbox not made, or not resumed, so far); and which admitted
     * starts have ended (or have no record), whose promise no longer holds.
     */
    async admissionCounts(a: { userId: string; admitted: { taskId: string; roomFor: string | null }[] }): Promise<{ runningSandboxes: number; roomPromised: number; endedTaskIds: string[] }> {
      const roomFor = a.admitted.flatMap((r) => (r.roomFor ? [r.roomFor] : []));
      const taskIds = a.admitted.map((r) => r.taskId);
      const [runningSandboxes, sandboxes, tasks] = await Promise.all([
        deps.sandboxes.countActive(a.userId),
        roomFor.length ? deps.sandboxes.getManyOwned(roomFor, a.userId) : new Map<string, SandboxRecord>(),
        taskIds.length ? deps.startTasks.getManyOwned(taskIds, a.userId) : new Map<string, StartTaskRecord>(),
      ]);
      const ended = (taskId: string) => {
        const t = tasks.get(taskId);
        return !t || TERMINAL_STATUSES.includes(t.status);
      };
      const endedTaskIds = taskIds.filter(ended);
      const roomPromised = a.admitted.filter((r) => r.roomFor && !ended(r.taskId) && !ACTIVE.has(sandboxes.get(r.roomFor)?.status ?? '')).length;
      return { runningSandboxes, roomPromised, endedTaskIds };
    },
  };
}
