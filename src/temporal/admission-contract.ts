/**
 * The start-admission workflow's part of the Temporal contract: the lines' ids, their limits, requests and
 * verdicts, and the signals and query that carry them. Workflow-safe.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * One admission workflow per user (`start-admission-<user id>`), and one per organization with quotas
 * (`start-admission-org-<organization id>`): a semaphore with a FIFO line. A start asks for a place
 * (signal-with-start, from an activity) and waits for the workflow's word; it says when it has ended.
 * The workflow admits from the front while the quotas allow, tells each waiting start its place, and
 * ends when nobody waits or holds a place. A start takes its place in its user's line first, then in
 * its organization's: every start takes them in that order, so none waits on another in a circle.
 */
export const startAdmissionWorkflowId = (userId: string) => `start-admission-${userId}`;
export const organizationAdmissionWorkflowId = (organizationId: string) => `start-admission-org-${organizationId}`;

/** Which line: a user's, or an organization's. */
export type AdmissionLineKind = 'user' | 'organization';

/** What the starts of one line may hold at once; null: no bound. */
export interface AdmissionLimits {
  /** Starts under way (USER_MAX_CONCURRENT_STARTS, or the organization's): each holds at most one of the worker's activity slots. */
  maxStarts: number | null;
  /** Sandboxes starting or running (USER_MAX_RUNNING_SANDBOXES, or the organization's): a start that makes a new one needs room. */
  maxRunning: number | null;
  /** How a waiting start is told where each limit comes from (an organization's: its variable or its own quota); absent: the user's variables. */
  named?: { maxStarts: string; maxRunning: string };
}

/** A start asking for its turn; the latest request's limits are the ones that hold. */
export interface AdmissionRequest {
  taskId: string;
  /**
   * The sandbox the start needs room for among the line's running ones: the one it will make, or the one
   * it names when that one does not run (it resumes it); null when it uses a sandbox that runs.
   */
  roomFor: string | null;
  limits: AdmissionLimits;
}

/** Whose line: a user's (every run before organization lines), or an organization's. */
export type AdmissionLineOwner =
  { userId: string; organizationId?: undefined } | { organizationId: string; userId?: undefined };

export type StartAdmissionInput = AdmissionLineOwner & {
  limits: AdmissionLimits;
  /** How often a line held up by the running-sandbox quota looks again at the sandboxes (ms). */
  pollMs: number;
  /** Set when the workflow continued as new: the line and the holders. */
  queue?: AdmissionRequest[];
  admitted?: AdmissionRequest[];
};

/** Signal to the admission workflow: a start asks for its turn (a second ask of the same task changes nothing). */
export const admissionRequestSignal = defineSignal<[AdmissionRequest]>('admissionRequest');
/** Signal to the admission workflow: the start has ended (or gave up waiting); its place goes to the next. */
export const admissionReleaseSignal = defineSignal<[{ taskId: string }]>('admissionRelease');
/** Query of the admission workflow: who holds a place and who waits, in order. */
export const admissionLineQuery = defineQuery<{ admitted: string[]; waiting: string[] }>('line');

/**
 * The admission workflow's word to a start: go on, or its place in line and what holds it up. `line`
 * says which of the start's lines speaks (absent: its user's, as before organization lines).
 */
export type AdmissionVerdict = ({ admitted: true } | { admitted: false; place: number; reason: string }) & {
  line?: AdmissionLineKind;
};
/** Signal to the start-task workflow carrying the verdict. */
export const admissionVerdictSignal = defineSignal<[AdmissionVerdict]>('admissionVerdict');
