/**
 * The start's places in its user's line and its organization's line (start-admission workflows): asking
 * for a turn, waiting for it while WAITING_FOR_SANDBOX shows the place, and giving the places back.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import {
  admissionReleaseSignal,
  admissionVerdictSignal,
  startAdmissionWorkflowId,
  type AdmissionLineKind,
  type AdmissionVerdict,
  type StartTaskSettings,
} from '../src/temporal/shared';
import { askAdmission } from './start-task-activity-proxies';
import { ORGANIZATION_ADMISSION, START_ADMISSION } from './start-task-patches';
import type { StartTaskRun } from './start-task-run';

export class StartTaskLines {
  /** The lines (their workflow ids) the start holds a place in or waits in: given back when it ends. */
  private readonly held: string[] = [];

  constructor(private readonly run: StartTaskRun) {}

  /** Whether the start holds a place in any line. */
  get inLine(): boolean {
    return this.held.length > 0;
  }

  /**
   * Decides which lines the start waits in: over the user's quotas, then over its organization's, the
   * start waits its turn, still WAITING_FOR_SANDBOX, its place in the detail. Runs recorded before each
   * line replay without it. Answers the wait for a turn in each (again after a requeue), which answers
   * the organization a start admitted by its line counts in.
   */
  turnsFor(newSandboxId: string): () => Promise<string | undefined> {
    const admission = this.run.settings.admission;
    const userLine =
      !!admission && (admission.maxStarts !== null || admission.maxRunning !== null) && patched(START_ADMISSION);
    const organizationLine = !!admission && patched(ORGANIZATION_ADMISSION);
    return async () => {
      let organizationId: string | undefined;
      if (userLine) await this.waitForTurn(admission!, newSandboxId, 'user');
      if (organizationLine) organizationId = await this.waitForTurn(admission!, newSandboxId, 'organization');
      return organizationId;
    };
  }

  /** Gives the start's places in line back (a line that has ended already has nothing to give back). */
  async leave(): Promise<void> {
    const left = this.held.splice(0);
    await Promise.all(
      left.map((lineId) =>
        getExternalWorkflowHandle(lineId)
          .signal(admissionReleaseSignal, { taskId: this.run.taskId })
          .catch(() => undefined),
      ),
    );
  }

  /**
   * Asks the user's line, or the line of the organization the user acts in, for a turn and waits for it,
   * reporting each new place; past the wait's bound the start fails (and leaves the line, like any start
   * that ends). A start with nothing to wait for (no room needed, no bound on starts, an organization
   * without quotas) is not put in line. Answers the organization a start admitted by its line counts in.
   */
  private async waitForTurn(
    admission: NonNullable<StartTaskSettings['admission']>,
    newSandboxId: string,
    line: AdmissionLineKind,
  ): Promise<string | undefined> {
    const { taskId, userId, request } = this.run;
    let verdict: AdmissionVerdict | null = null;
    let heard = false;
    setHandler(admissionVerdictSignal, (v) => {
      // Only this line's word counts (a verdict without `line` is the user's line's); admitted stays
      // admitted: a late place never takes it back.
      if ((v.line ?? 'user') !== line) return;
      if (!verdict?.admitted) verdict = v;
      heard = true;
    });
    const { maxStarts, maxRunning, queueWaitMs, pollMs } = admission;
    const named = request.sandbox_id ?? null;
    const asked = await askAdmission({
      userId,
      taskId,
      newSandboxId: named ? null : newSandboxId,
      namedSandboxId: named,
      limits: { maxStarts, maxRunning },
      pollMs,
      ...(line === 'organization' ? { line } : {}),
    });
    if (!asked.inLine) return asked.organizationId;
    // Runs recorded before organization lines were told no line id: theirs is the user's.
    this.held.push(asked.lineId ?? startAdmissionWorkflowId(userId));
    // One timer bounds the whole wait; it goes when the start is admitted.
    let timedOut = false;
    const bound = new CancellationScope();
    bound
      .run(() => sleep(queueWaitMs))
      .then(
        () => void (timedOut = true),
        () => undefined,
      );
    let last: string | null = null;
    try {
      for (;;) {
        await condition(() => heard || timedOut);
        if (!heard) {
          throw ApplicationFailure.nonRetryable(
            `The start waited ${Math.round(queueWaitMs / 1000)} s in ${line === 'user' ? 'line' : "its organization's line"} for its turn and did not get it (START_QUEUE_WAIT_MS)${last ? `; last seen at ${last}` : ''}`,
          );
        }
        heard = false;
        const v = verdict as AdmissionVerdict | null;
        if (!v) continue;
        if (v.admitted) return asked.organizationId;
        const place = `place ${v.place}: ${v.reason}`;
        if (place !== last) await this.run.report('WAITING_FOR_SANDBOX', `Waiting in line at ${place}`);
        last = place;
      }
    } finally {
      bound.cancel();
    }
  }
}
