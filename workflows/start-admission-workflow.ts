/**
 * The admission workflow (`start-admission-<user id>`): one user's starts in line. A semaphore with a
 * FIFO queue, as a workflow because its state (who holds a place, who waits, in which order) must
 * outlive any worker or api process, and one workflow per key handles its signals one at a time, so two
 * starts never take the same last place. Per user, because the quotas it applies are the user's.
 *
 *   ask (signal) -> wait in line, told its place -> admitted -> ... -> release (signal) -> next admitted
 *
 * A start is admitted when the user has fewer than `maxStarts` starts admitted and, for a start that
 * makes a new sandbox, fewer than `maxRunning` sandboxes starting or running (counting the new sandboxes
 * of admitted starts not yet made). The line does not overtake: the first waits, so the others do.
 * An admitted start that ended without saying so (terminated) is found by its record and let go.
 */
import { condition, continueAsNew, getExternalWorkflowHandle, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  admissionLineQuery,
  admissionReleaseSignal,
  admissionRequestSignal,
  admissionVerdictSignal,
  startTaskWorkflowId,
  type AdmissionRequest,
  type AdmissionVerdict,
  type StartAdmissionInput,
} from '../src/temporal/shared';
import { ACTIVITY_OPTIONS } from './activity-options';

const { admissionCounts } = proxyLocalActivities<Activities>(ACTIVITY_OPTIONS.quick);

export async function startAdmissionWorkflow(input: StartAdmissionInput): Promise<void> {
  const { userId, pollMs } = input;
  let limits = input.limits;
  const waiting: AdmissionRequest[] = [...(input.queue ?? [])];
  const admitted: AdmissionRequest[] = [...(input.admitted ?? [])];
  const placeTold = new Map<string, string>();
  let changed = true;
  const known = (taskId: string) => waiting.some((r) => r.taskId === taskId) || admitted.some((r) => r.taskId === taskId);
  const drop = (taskId: string) => {
    for (const list of [waiting, admitted]) {
      const i = list.findIndex((r) => r.taskId === taskId);
      if (i >= 0) list.splice(i, 1);
    }
    placeTold.delete(taskId);
  };

  setHandler(admissionRequestSignal, (request) => {
    limits = request.limits;
    if (!known(request.taskId)) waiting.push(request);
    changed = true;
  });
  setHandler(admissionReleaseSignal, ({ taskId }) => {
    drop(taskId);
    changed = true;
  });
  setHandler(admissionLineQuery, () => ({ admitted: admitted.map((r) => r.taskId), waiting: waiting.map((r) => r.taskId) }));

  /** Tells a start its verdict; a start that is gone (its workflow closed) loses its place. */
  const tell = (taskId: string, verdict: AdmissionVerdict) =>
    getExternalWorkflowHandle(startTaskWorkflowId(taskId))
      .signal(admissionVerdictSignal, verdict)
      .catch(() => {
        drop(taskId);
        changed = true;
      });

  while (waiting.length > 0 || admitted.length > 0) {
    if (workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof startAdmissionWorkflow>({ userId, pollMs, limits, queue: waiting, admitted });
    }
    changed = false;
    let blockedBy: string | null = null;
    if (waiting.length > 0) {
      const counts = await admissionCounts({
        userId,
        taskIds: admitted.map((r) => r.taskId),
        newSandboxIds: admitted.flatMap((r) => (r.newSandboxId ? [r.newSandboxId] : [])),
      });
      for (const taskId of counts.endedTaskIds) drop(taskId);
      let running = counts.runningSandboxes + counts.sandboxesToMake;
      const told: Promise<void>[] = [];
      while (waiting.length > 0) {
        const next = waiting[0]!;
        if (limits.maxStarts !== null && admitted.length >= limits.maxStarts) {
          blockedBy = `you have ${admitted.length} starts under way, as many as one user may (USER_MAX_CONCURRENT_STARTS=${limits.maxStarts}); it goes on when one of them ends`;
          break;
        }
        if (next.newSandboxId && limits.maxRunning !== null && running >= limits.maxRunning) {
          blockedBy = `you have ${running} sandboxes starting or running, as many as one user may (USER_MAX_RUNNING_SANDBOXES=${limits.maxRunning}); it goes on when one is paused or deleted`;
          break;
        }
        waiting.shift();
        admitted.push(next);
        placeTold.delete(next.taskId);
        if (next.newSandboxId) running++;
        told.push(tell(next.taskId, { admitted: true }));
      }
      waiting.forEach((r, i) => {
        const verdict: AdmissionVerdict = { admitted: false, place: i + 1, waiting: waiting.length, reason: blockedBy! };
        const said = `${verdict.place}/${verdict.waiting}/${verdict.reason}`;
        if (placeTold.get(r.taskId) === said) return;
        placeTold.set(r.taskId, said);
        told.push(tell(r.taskId, verdict));
      });
      await Promise.all(told);
    }
    // A line held up by its running sandboxes looks again now and then (a sandbox paused for idleness
    // frees room without a word here); one held up by starts waits for a release, or looks again
    // now and then for a holder that ended without one.
    if (changed) continue;
    if (waiting.length > 0) await condition(() => changed, pollMs);
    else await condition(() => changed);
  }
}
