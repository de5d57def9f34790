/**
 * The admission workflow (`start-admission-<user id>`, or `start-admission-org-<organization id>`): one
 * user's starts in line, or one organization's (its members', each past their own user's line first). A
 * semaphore with a FIFO queue, as a workflow because its state (who holds a place, who waits, in which
 * order) must outlive any worker or api process, and one workflow per key handles its signals one at a
 * time, so two starts never take the same last place. Per user or organization, because the quotas it
 * applies are theirs.
 *
 *   ask (signal) -> wait in line, told its place -> admitted -> ... -> release (signal) -> next admitted
 *
 * A start is admitted when the line (its user, or its organization) has fewer than `maxStarts` starts admitted and, for a start that
 * needs room for a sandbox (a new one, or a paused one it resumes), fewer than `maxRunning` sandboxes
 * starting or running, counting the room admitted starts have not taken yet. Starts that need room never
 * overtake each other; one that needs none passes those held up for room. An admitted start that ended
 * without saying so (terminated) is found by its record, looked at now and then, and let go.
 */
import {
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  admissionLineQuery,
  admissionReleaseSignal,
  admissionRequestSignal,
  admissionVerdictSignal,
  startTaskWorkflowId,
  type AdmissionLimits,
  type AdmissionLineOwner,
  type AdmissionRequest,
  type AdmissionVerdict,
  type StartAdmissionInput,
} from '../src/temporal/shared';

// The line must outlive a database that does not answer for a while: its counts are tried until they come.
const { admissionCounts } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** How often a line with holders but nobody waiting looks for a holder that ended without a word (ms). */
const HOLDERS_CHECK_MS = 60_000;

/** Why a start waits, in the words of its line: the user's own quotas, or its organization's. */
function heldBecause(owner: AdmissionLineOwner, limits: AdmissionLimits, what: 'starts' | 'room'): string {
  const { maxStarts, maxRunning, named } = limits;
  if (owner.organizationId === undefined) {
    return what === 'starts'
      ? `as many of your starts are under way as one user may have (USER_MAX_CONCURRENT_STARTS=${maxStarts}); it goes on when one of them ends`
      : `your sandboxes starting or running, with those your admitted starts are bringing up, are as many as one user may have (USER_MAX_RUNNING_SANDBOXES=${maxRunning}); it goes on when one is paused or deleted`;
  }
  return what === 'starts'
    ? `as many starts of your organization's members are under way as it may have (${named?.maxStarts ?? maxStarts}); it goes on when one of them ends`
    : `your organization's sandboxes starting or running, with those its admitted starts are bringing up, are as many as it may have (${named?.maxRunning ?? maxRunning}); it goes on when one of its members pauses or deletes one`;
}

export async function startAdmissionWorkflow(input: StartAdmissionInput): Promise<void> {
  const { pollMs } = input;
  const owner: AdmissionLineOwner =
    input.organizationId !== undefined ? { organizationId: input.organizationId } : { userId: input.userId };
  const line = owner.organizationId !== undefined ? 'organization' : 'user';
  let limits = input.limits;
  let waiting: AdmissionRequest[] = [...(input.queue ?? [])];
  const admitted: AdmissionRequest[] = [...(input.admitted ?? [])];
  /** What each waiting start was last told, so it is told again only when that changes. */
  const told = new Map<string, string>();
  /** Admitted starts that asked again (a reset run): told again that they are admitted. */
  const askedAgain = new Set<string>();
  let changed = true;
  /** A wait ran out without a word: the counts are read again. */
  let lookAgain = false;
  const drop = (taskId: string) => {
    waiting = waiting.filter((r) => r.taskId !== taskId);
    const i = admitted.findIndex((r) => r.taskId === taskId);
    if (i >= 0) admitted.splice(i, 1);
    told.delete(taskId);
    askedAgain.delete(taskId);
  };

  setHandler(admissionRequestSignal, (request) => {
    limits = request.limits;
    if (admitted.some((r) => r.taskId === request.taskId)) askedAgain.add(request.taskId);
    else if (waiting.some((r) => r.taskId === request.taskId)) told.delete(request.taskId);
    else waiting.push(request);
    changed = true;
  });
  setHandler(admissionReleaseSignal, ({ taskId }) => {
    drop(taskId);
    changed = true;
  });
  setHandler(admissionLineQuery, () => ({
    admitted: admitted.map((r) => r.taskId),
    waiting: waiting.map((r) => r.taskId),
  }));

  /** Tells a start its verdict; a start that is gone (its workflow closed) loses its place. */
  const tell = (taskId: string, verdict: AdmissionVerdict) =>
    getExternalWorkflowHandle(startTaskWorkflowId(taskId))
      .signal(admissionVerdictSignal, line === 'user' ? verdict : { ...verdict, line })
      .catch(() => {
        drop(taskId);
        changed = true;
      });

  while (waiting.length > 0 || admitted.length > 0) {
    if (workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof startAdmissionWorkflow>({ ...owner, pollMs, limits, queue: waiting, admitted });
    }
    changed = false;
    const { maxStarts, maxRunning } = limits;
    // The database is read when a waiting start needs room, or a wait ran out (a holder may have ended
    // unheard); a start that needs none, and a release, are decided from the line alone.
    const look = lookAgain;
    lookAgain = false;
    let room = Infinity;
    if ((maxRunning !== null && waiting.some((r) => r.roomFor !== null)) || look) {
      const counts = await admissionCounts({
        ...owner,
        admitted: admitted.map(({ taskId, roomFor }) => ({ taskId, roomFor })),
      });
      for (const taskId of counts.endedTaskIds) drop(taskId);
      if (maxRunning !== null) room = maxRunning - counts.runningSandboxes - counts.roomPromised;
    }
    const sends: Promise<void>[] = [...askedAgain].map((taskId) => tell(taskId, { admitted: true }));
    askedAgain.clear();
    const held: { request: AdmissionRequest; reason: string }[] = [];
    for (const request of waiting) {
      if (maxStarts !== null && admitted.length >= maxStarts) {
        held.push({ request, reason: heldBecause(owner, limits, 'starts') });
      } else if (request.roomFor !== null && room <= 0) {
        held.push({ request, reason: heldBecause(owner, limits, 'room') });
      } else {
        admitted.push(request);
        if (request.roomFor !== null) room--;
        told.delete(request.taskId);
        sends.push(tell(request.taskId, { admitted: true }));
      }
    }
    waiting = held.map((h) => h.request);
    held.forEach(({ request, reason }, i) => {
      const verdict: AdmissionVerdict = { admitted: false, place: i + 1, reason };
      const said = `${verdict.place} ${reason}`;
      if (told.get(request.taskId) === said) return;
      told.set(request.taskId, said);
      sends.push(tell(request.taskId, verdict));
    });
    await Promise.all(sends);
    if (changed) continue;
    // Room for sandboxes frees without a word here (a pause, a delete, an idle pause): a line held up
    // looks again every pollMs; one with holders only, now and then, for a holder that ended unheard.
    lookAgain = !(await condition(() => changed, waiting.length > 0 ? pollMs : HOLDERS_CHECK_MS));
  }
}
