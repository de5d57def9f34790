/**
 * The state of one admission line (who holds a place, who waits, in which order, what each was told), its
 * signals and query, and the pass that admits the starts that fit and tells the others their place.
 */
import { getExternalWorkflowHandle, proxyLocalActivities, setHandler } from '@temporalio/workflow';
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

export class AdmissionLine {
  readonly owner: AdmissionLineOwner;
  private readonly line: 'organization' | 'user';
  limits: AdmissionLimits;
  waiting: AdmissionRequest[];
  readonly admitted: AdmissionRequest[];
  /** What each waiting start was last told, so it is told again only when that changes. */
  private readonly told = new Map<string, string>();
  /** Admitted starts that asked again (a reset run): told again that they are admitted. */
  private readonly askedAgain = new Set<string>();
  /** A signal came, or a start was found gone, since the last pass began: the line is looked at again. */
  changed = true;
  /** A wait ran out without a word: the counts are read again. */
  lookAgain = false;

  constructor(input: StartAdmissionInput) {
    this.owner =
      input.organizationId !== undefined ? { organizationId: input.organizationId } : { userId: input.userId };
    this.line = this.owner.organizationId !== undefined ? 'organization' : 'user';
    this.limits = input.limits;
    this.waiting = [...(input.queue ?? [])];
    this.admitted = [...(input.admitted ?? [])];
  }

  /** Someone waits or holds a place: the workflow goes on. */
  get inUse(): boolean {
    return this.waiting.length > 0 || this.admitted.length > 0;
  }

  /** The input of the run this one continues as. */
  continuation(pollMs: number): StartAdmissionInput {
    return { ...this.owner, pollMs, limits: this.limits, queue: this.waiting, admitted: this.admitted };
  }

  /** Takes asks (in line, or asked again) and releases, and answers the query with the line. */
  listen(): void {
    setHandler(admissionRequestSignal, (request) => {
      this.limits = request.limits;
      if (this.admitted.some((r) => r.taskId === request.taskId)) this.askedAgain.add(request.taskId);
      else if (this.waiting.some((r) => r.taskId === request.taskId)) this.told.delete(request.taskId);
      else this.waiting.push(request);
      this.changed = true;
    });
    setHandler(admissionReleaseSignal, ({ taskId }) => {
      this.drop(taskId);
      this.changed = true;
    });
    setHandler(admissionLineQuery, () => ({
      admitted: this.admitted.map((r) => r.taskId),
      waiting: this.waiting.map((r) => r.taskId),
    }));
  }

  /**
   * Room for sandboxes the line has left under `maxRunning` (Infinity: not counted). The database is read
   * when a waiting start needs room, or a wait ran out (a holder may have ended unheard); a start that
   * needs none, and a release, are decided from the line alone. Starts found ended are dropped.
   */
  async roomForSandboxes(maxRunning: number | null): Promise<number> {
    const look = this.lookAgain;
    this.lookAgain = false;
    let room = Infinity;
    if ((maxRunning !== null && this.waiting.some((r) => r.roomFor !== null)) || look) {
      const counts = await admissionCounts({
        ...this.owner,
        admitted: this.admitted.map(({ taskId, roomFor }) => ({ taskId, roomFor })),
      });
      for (const taskId of counts.endedTaskIds) this.drop(taskId);
      if (maxRunning !== null) room = maxRunning - counts.runningSandboxes - counts.roomPromised;
    }
    return room;
  }

  /**
   * Admits, in order, the waiting starts that fit under `maxStarts` and `room`, and tells the others their
   * place and why (only when that changed); starts that asked again are told again. Answers the sends.
   */
  admitWhoFits(maxStarts: number | null, room: number): Promise<void>[] {
    const { owner, limits, admitted, told } = this;
    const sends: Promise<void>[] = [...this.askedAgain].map((taskId) => this.tell(taskId, { admitted: true }));
    this.askedAgain.clear();
    const held: { request: AdmissionRequest; reason: string }[] = [];
    for (const request of this.waiting) {
      if (maxStarts !== null && admitted.length >= maxStarts) {
        held.push({ request, reason: heldBecause(owner, limits, 'starts') });
      } else if (request.roomFor !== null && room <= 0) {
        held.push({ request, reason: heldBecause(owner, limits, 'room') });
      } else {
        admitted.push(request);
        if (request.roomFor !== null) room--;
        told.delete(request.taskId);
        sends.push(this.tell(request.taskId, { admitted: true }));
      }
    }
    this.waiting = held.map((h) => h.request);
    held.forEach(({ request, reason }, i) => {
      const verdict: AdmissionVerdict = { admitted: false, place: i + 1, reason };
      const said = `${verdict.place} ${reason}`;
      if (told.get(request.taskId) === said) return;
      told.set(request.taskId, said);
      sends.push(this.tell(request.taskId, verdict));
    });
    return sends;
  }

  /** Tells a start its verdict; a start that is gone (its workflow closed) loses its place. */
  private tell(taskId: string, verdict: AdmissionVerdict): Promise<void> {
    return getExternalWorkflowHandle(startTaskWorkflowId(taskId))
      .signal(admissionVerdictSignal, this.line === 'user' ? verdict : { ...verdict, line: this.line })
      .catch(() => {
        this.drop(taskId);
        this.changed = true;
      });
  }

  private drop(taskId: string): void {
    this.waiting = this.waiting.filter((r) => r.taskId !== taskId);
    const i = this.admitted.findIndex((r) => r.taskId === taskId);
    if (i >= 0) this.admitted.splice(i, 1);
    this.told.delete(taskId);
    this.askedAgain.delete(taskId);
  }
}
