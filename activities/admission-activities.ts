/**
 * The admission workflow's side effects: asking for a start's turn (signal-with-start, so the first ask
 * starts the user's line and a later one joins it), and the counts it admits by, read from MongoDB.
 */
import type { Client } from '@temporalio/client';
import { TERMINAL_STATUSES } from '../src/app-conversations/start-task-service';
import type { SandboxesStore } from '../src/store/sandboxes-store';
import type { StartTasksStore } from '../src/store/start-tasks-store';
import { admissionRequestSignal, startAdmissionWorkflowId, WORKFLOW_TYPES, workflowSummaries, type AdmissionRequest, type StartAdmissionInput, type StartAdmissionWorkflow } from '../src/temporal/shared';

export interface AdmissionActivityDeps {
  temporal: Client;
  taskQueue: string;
  sandboxes: SandboxesStore;
  startTasks: StartTasksStore;
}

export function createAdmissionActivities(deps: AdmissionActivityDeps) {
  return {
    /** Puts the start in its user's line, starting the line's workflow when there is none. */
    async askAdmission(a: { userId: string; request: AdmissionRequest; pollMs: number }): Promise<void> {
      const input: StartAdmissionInput = { userId: a.userId, limits: a.request.limits, pollMs: a.pollMs };
      await deps.temporal.workflow.signalWithStart<StartAdmissionWorkflow, [AdmissionRequest]>(WORKFLOW_TYPES.startAdmission, {
        workflowId: startAdmissionWorkflowId(a.userId),
        taskQueue: deps.taskQueue,
        args: [input],
        signal: admissionRequestSignal,
        signalArgs: [a.request],
        ...workflowSummaries.startAdmission(input),
      });
    },

    /**
     * What the line admits by: the user's sandboxes starting or running, how many of the admitted starts'
     * new sandboxes are not made yet, and which admitted starts have ended (or have no record).
     */
    async admissionCounts(a: { userId: string; taskIds: string[]; newSandboxIds: string[] }): Promise<{ runningSandboxes: number; sandboxesToMake: number; endedTaskIds: string[] }> {
      const [runningSandboxes, made, tasks] = await Promise.all([
        deps.sandboxes.countActive(a.userId),
        a.newSandboxIds.length ? deps.sandboxes.getManyOwned(a.newSandboxIds, a.userId) : new Map(),
        a.taskIds.length ? deps.startTasks.getManyOwned(a.taskIds, a.userId) : new Map(),
      ]);
      const endedTaskIds = a.taskIds.filter((id) => {
        const t = tasks.get(id);
        return !t || TERMINAL_STATUSES.includes(t.status);
      });
      return { runningSandboxes, sandboxesToMake: a.newSandboxIds.length - made.size, endedTaskIds };
    },
  };
}
