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
 * without saying so (terminated) is found by its record, looked at now and then, and let go. The line's
 * state, signals and each pass over it are in start-admission-line.ts; this file is the run.
 */
import { condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { StartAdmissionInput } from '../src/temporal/shared';
import { AdmissionLine } from './start-admission-line';

/** How often a line with holders but nobody waiting looks for a holder that ended without a word (ms). */
const HOLDERS_CHECK_MS = 60_000;

export async function startAdmissionWorkflow(input: StartAdmissionInput): Promise<void> {
  const { pollMs } = input;
  const line = new AdmissionLine(input);
  line.listen();

  while (line.inUse) {
    if (workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof startAdmissionWorkflow>(line.continuation(pollMs));
    }
    line.changed = false;
    const { maxStarts, maxRunning } = line.limits;
    const room = await line.roomForSandboxes(maxRunning);
    await Promise.all(line.admitWhoFits(maxStarts, room));
    if (line.changed) continue;
    // Room for sandboxes frees without a word here (a pause, a delete, an idle pause): a line held up
    // looks again every pollMs; one with holders only, now and then, for a holder that ended unheard.
    line.lookAgain = !(await condition(() => line.changed, line.waiting.length > 0 ? pollMs : HOLDERS_CHECK_MS));
  }
}
